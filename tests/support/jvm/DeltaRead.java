import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.Map;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;

/**
 * Reads Delta tables with delta-spark, the Delta protocol's reference implementation, and prints
 * their rows: per table a marker line "#table N" (N: the table's place on the command line), then
 * one JSON object per row; "#error N message" instead of the rest if reading table N failed; and
 * "#done" last. One JVM start serves every table given.
 *
 * <p>Compiled and run by tests/support/delta_reference.py, which says why it is a JVM of its own.
 */
public final class DeltaRead {
  // Nulls written as nulls (not left out), timestamps in UTC to the microsecond (Spark's JSON
  // default stops at the millisecond); binary columns come out as base64.
  private static final Map<String, String> JSON =
      Map.of(
          "ignoreNullFields", "false",
          "timestampFormat", "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX");

  private DeltaRead() {}

  public static void main(String[] args) {
    // Only this program writes to stdout: anything a library prints goes to stderr.
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    System.setOut(System.err);
    SparkSession spark =
        SparkSession.builder()
            .master("local[1]")
            .appName("kappa-delta-reference")
            .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
            .config(
                "spark.sql.catalog.spark_catalog",
                "org.apache.spark.sql.delta.catalog.DeltaCatalog")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            // Small tables: one task per stage, not Spark's 200 shuffle or Delta's 50 log
            // replay partitions.
            .config("spark.sql.shuffle.partitions", "1")
            .config("spark.databricks.delta.snapshotPartitions", "1")
            .config("spark.sql.session.timeZone", "UTC")
            .getOrCreate();
    try {
      for (int i = 0; i < args.length; i++) {
        out.println("#table " + i);
        try {
          Column row = functions.to_json(functions.struct(functions.col("*")), JSON);
          Iterator<Row> rows =
              spark.read().format("delta").load(args[i]).select(row).toLocalIterator();
          while (rows.hasNext()) {
            out.println(rows.next().getString(0));
          }
        } catch (Exception e) {
          out.println("#error " + i + " " + causes(e));
        }
        out.flush();
      }
      out.println("#done");
      out.flush();
    } finally {
      spark.stop();
    }
  }

  /** The exception and its causes on one line: Spark wraps the reason a read failed. */
  private static String causes(Throwable e) {
    StringBuilder text = new StringBuilder(String.valueOf(e));
    for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
      text.append(" <- ").append(cause);
    }
    return text.toString().replace('\n', ' ');
  }
}
