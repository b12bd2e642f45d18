"""The connector: the only package that touches psycopg pools, rows and JSON adaptation."""
