import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.Stores;

/**
 * The Kafka Streams peer of the platform's benchmark: one workload per run, written the way the
 * Kafka Streams documentation writes it, reading the same topics as the platform's pipelines and
 * writing every result to one output topic keyed by the result's key.
 *
 * <p>Usage: {@code PeerApp WORKLOAD BOOTSTRAP APPLICATION_ID STATE_DIR OUTPUT_TOPIC
 * COMMIT_INTERVAL_MS THREADS}, WORKLOAD one of latest, fraud, spend, clicks. It runs until
 * SIGTERM (the benchmark decides when the output is complete from the committed offsets).
 */
public final class PeerApp {
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);
  private static final Serde<String> KEYS = Serdes.String();
  private static final Serde<JsonNode> VALUES = Serdes.serdeFrom(new JsonWriter(), new JsonReader());
  // The platform's grace period for late records (README, Streaming semantics).
  private static final Duration GRACE = Duration.ofMinutes(10);

  private PeerApp() {}

  public static void main(String[] args) throws InterruptedException {
    if (args.length != 7) {
      System.err.println(
          "usage: PeerApp WORKLOAD BOOTSTRAP APPLICATION_ID STATE_DIR OUTPUT_TOPIC"
              + " COMMIT_INTERVAL_MS THREADS");
      System.exit(2);
    }
    String workload = args[0];
    String output = args[4];
    StreamsBuilder builder = new StreamsBuilder();
    switch (workload) {
      case "latest" -> latestPerKey(builder, output);
      case "fraud" -> fraudJoin(builder, output);
      case "spend" -> hourlySpend(builder, output);
      case "clicks" -> clickSearchJoin(builder, output);
      default -> {
        System.err.println("unknown workload " + workload);
        System.exit(2);
      }
    }
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[2]);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
    props.put(StreamsConfig.STATE_DIR_CONFIG, args[3]);
    // Exactly once, as the platform's tables are: results become visible to read_committed
    // readers with the transaction that also commits the input offsets.
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, args[5]);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, args[6]);
    // The source topic doubles as the table's changelog (no second copy of the customers).
    props.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, StreamsConfig.OPTIMIZE);
    props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    // A left stream-stream join emits a click without a match once its window has closed, but
    // only at most once a second of wall-clock time, and only while records arrive: the last
    // windows of a log would never be emitted. This internal setting checks at every record.
    props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);

    Topology topology = builder.build(props);
    KafkaStreams streams = new KafkaStreams(topology, props);
    CountDownLatch stopped = new CountDownLatch(1);
    streams.setUncaughtExceptionHandler(
        error -> {
          error.printStackTrace();
          return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
    streams.setStateListener(
        (now, before) -> {
          System.out.println(java.time.LocalTime.now() + " state " + before + " -> " + now);
          if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
            stopped.countDown();
          }
        });
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  streams.close(Duration.ofSeconds(30));
                  stopped.countDown();
                }));
    streams.start();
    stopped.await();
    if (streams.state() == KafkaStreams.State.ERROR) {
      System.exit(1);
    }
  }

  /** The customers changelog as a table (a KTable in a RocksDB store); its changes go out. */
  static void latestPerKey(StreamsBuilder builder, String output) {
    KTable<String, JsonNode> customers =
        builder.table(
            "customers",
            Consumed.with(KEYS, VALUES),
            Materialized.<String, JsonNode>as(Stores.persistentKeyValueStore("customers"))
                .withKeySerde(KEYS)
                .withValueSerde(VALUES));
    customers.toStream().to(output, Produced.with(KEYS, VALUES));
  }

  /**
   * Each transaction with its customer's country and name as of the transaction's timestamp: a
   * stream-table join on a versioned store (KIP-914), which looks the customer up as of the
   * stream record's timestamp. It joins when the transaction is processed: a customer change
   * processed later does not change a result already emitted.
   */
  static void fraudJoin(StreamsBuilder builder, String output) {
    KTable<String, JsonNode> customers =
        builder.table(
            "customers",
            Consumed.with(KEYS, VALUES),
            Materialized.<String, JsonNode>as(
                    Stores.persistentVersionedKeyValueStore("customers-as-of", GRACE))
                .withKeySerde(KEYS)
                .withValueSerde(VALUES));
    KStream<String, JsonNode> transactions =
        builder.stream("transactions", Consumed.with(KEYS, VALUES));
    transactions
        .leftJoin(customers, PeerApp::enrich, Joined.with(KEYS, VALUES, VALUES))
        .selectKey((customer, row) -> row.get("txn_id").asText())
        .to(output, Produced.with(KEYS, VALUES));
  }

  static JsonNode enrich(JsonNode txn, JsonNode customer) {
    ObjectNode row = txn.deepCopy();
    JsonNode country = customer == null ? null : customer.get("country");
    row.set("customer_country", country);
    row.set("customer_name", customer == null ? null : customer.get("name"));
    boolean suspicious = country == null || !country.equals(txn.get("country"));
    row.put("suspicious", suspicious);
    return row;
  }

  /** Per customer and 1-hour tumbling window (grace 10 minutes): count, total, largest. */
  static void hourlySpend(StreamsBuilder builder, String output) {
    builder.stream("transactions", Consumed.with(KEYS, VALUES))
        .groupByKey(Grouped.with(KEYS, VALUES))
        .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofHours(1), GRACE))
        .aggregate(PeerApp::emptySpend, PeerApp::addSpend, Materialized.with(KEYS, VALUES))
        .toStream()
        .map(
            (window, spend) -> {
              ObjectNode row = spend.deepCopy();
              row.put("customer_id", window.key());
              row.put("window_start", window.window().start());
              return KeyValue.pair(window.key() + "@" + window.window().start(), (JsonNode) row);
            })
        .to(output, Produced.with(KEYS, VALUES));
  }

  static JsonNode emptySpend() {
    ObjectNode spend = JSON.createObjectNode();
    spend.put("txn_count", 0L);
    spend.put("total_amount", BigDecimal.ZERO);
    spend.putNull("max_amount");
    return spend;
  }

  static JsonNode addSpend(String customer, JsonNode txn, JsonNode spend) {
    ObjectNode next = spend.deepCopy();
    BigDecimal amount = txn.get("amount").decimalValue();
    next.put("txn_count", spend.get("txn_count").asLong() + 1);
    next.put("total_amount", spend.get("total_amount").decimalValue().add(amount));
    JsonNode max = spend.get("max_amount");
    if (max == null || max.isNull() || max.decimalValue().compareTo(amount) < 0) {
      next.put("max_amount", amount);
    }
    return next;
  }

  /**
   * Each click with the same user's searches in the 10 minutes before it: a left stream-stream
   * join emits one result per matching search (the reader keeps the latest search), and a click
   * without any once its window has closed.
   */
  static void clickSearchJoin(StreamsBuilder builder, String output) {
    KStream<String, JsonNode> clicks = builder.stream("clicks", Consumed.with(KEYS, VALUES));
    KStream<String, JsonNode> searches = builder.stream("searches", Consumed.with(KEYS, VALUES));
    JoinWindows within =
        JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMinutes(10), GRACE).after(Duration.ZERO);
    clicks
        .leftJoin(searches, PeerApp::withSearch, within, StreamJoined.with(KEYS, VALUES, VALUES))
        .selectKey((user, row) -> row.get("click_id").asText())
        .to(output, Produced.with(KEYS, VALUES));
  }

  static JsonNode withSearch(JsonNode click, JsonNode search) {
    ObjectNode row = click.deepCopy();
    row.set("search_query", search == null ? null : search.get("query"));
    row.set("search_ts", search == null ? null : search.get("ts"));
    return row;
  }

  /** JSON bytes to a tree; a tombstone stays null. */
  static final class JsonReader implements Deserializer<JsonNode> {
    @Override
    public JsonNode deserialize(String topic, byte[] data) {
      if (data == null) {
        return null;
      }
      try {
        return JSON.readTree(data);
      } catch (IOException e) {
        throw new IllegalArgumentException("not JSON on " + topic, e);
      }
    }
  }

  static final class JsonWriter implements Serializer<JsonNode> {
    @Override
    public byte[] serialize(String topic, JsonNode data) {
      if (data == null) {
        return null;
      }
      try {
        return JSON.writeValueAsBytes(data);
      } catch (IOException e) {
        throw new IllegalArgumentException("cannot write JSON for " + topic, e);
      }
    }
  }
}
