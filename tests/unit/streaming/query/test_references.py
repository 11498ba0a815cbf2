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
