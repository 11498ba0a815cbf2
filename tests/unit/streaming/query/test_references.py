"""Which tables a SQL text reads, and how ``pipeline@version`` reaches the engine."""

from __future__ import annotations

from streaming.query.references import TableRef, table_refs

PIPELINES = ("customers", "transactions_enriched", "fraud_alerts")


def test_pipeline_names_and_versions_are_the_tables_read():
    sql = (
        "SELECT t.txn_id, c.country FROM transactions_enriched t "
        "JOIN customers@v2 c ON c.customer_id = t.customer_id JOIN customers USING (x)"
    )
    rewritten, refs = table_refs(sql, PIPELINES)
    assert refs == [
        TableRef("transactions_enriched"),
        TableRef("customers", "v2"),
        TableRef("customers"),
    ]
    assert 'JOIN "customers@v2" c ON' in rewritten
    assert rewritten.replace('"customers@v2"', "customers@v2") == sql


def test_strings_comments_columns_and_other_names_are_not_tables():
    sql = """
        -- customers in a comment
        SELECT 'fraud_alerts', x.customers /* customers */ FROM other x
        WHERE note = 'it''s customers@v1'
    """
    assert table_refs(sql, PIPELINES) == (sql, [])


def test_a_quoted_name_may_carry_a_version_with_dots():
    sql = 'SELECT count(*) FROM "customers@v1.2"'
    assert table_refs(sql, PIPELINES) == (sql, [TableRef("customers", "v1.2")])


def test_aliases_columns_and_common_table_expressions_named_like_pipelines_are_not_tables():
    sql = """
        WITH fraud_alerts AS (SELECT customer_id FROM transactions_enriched)
        SELECT customers.customers FROM other AS customers
        JOIN fraud_alerts f USING (customer_id)
        WHERE customer_id IN (SELECT customer_id FROM customers@v2)
    """
    rewritten, refs = table_refs(sql, PIPELINES)
    assert refs == [TableRef("transactions_enriched"), TableRef("customers", "v2")]
    assert 'FROM "customers@v2")' in rewritten


def test_text_the_parser_does_not_know_reads_every_pipeline_it_mentions():
    # Not SQL sqlglot parses: the engine judges it, with every table it might read registered.
    sql = "SELECT customers FROM fraud_alerts WHERE (("
    assert table_refs(sql, PIPELINES)[1] == [TableRef("customers"), TableRef("fraud_alerts")]
