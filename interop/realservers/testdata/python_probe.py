"""Runs what Superset and a notebook do with the Python clients, against a
coordinator (or the gateway) at host:port, and prints what it saw as JSON
for python_test.go.

usage: python_probe.py trino|presto HOST PORT
  trino:  trino-python-client's DB-API (a query, a query with a bound
          parameter), then its SQLAlchemy dialect (get_table_names,
          get_columns, a select() with a bound parameter)
  presto: presto-python-client's DB-API
"""
import json
import sys

client, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = {}
if client == "trino":
    import sqlalchemy as sa
    import trino

    conn = trino.dbapi.connect(host=host, port=port, user="alice", catalog="tpch", schema="tiny", http_scheme="http")
    cur = conn.cursor()
    cur.execute("SELECT count(*) FROM nation")
    out["count"] = cur.fetchall()[0][0]
    cur.execute("SELECT name FROM nation WHERE nationkey = ?", (3,))
    out["bound"] = cur.fetchall()[0][0]
    cur.execute("SELECT orderkey FROM orders ORDER BY orderkey")
    keys = [r[0] for r in cur.fetchall()]
    out["orders"], out["ordered"] = len(keys), keys == sorted(keys)

    engine = sa.create_engine(f"trino://alice@{host}:{port}/tpch/tiny")
    inspector = sa.inspect(engine)
    out["tables"] = sorted(inspector.get_table_names())
    out["columns"] = [c["name"] for c in inspector.get_columns("nation")]
    nation = sa.Table("nation", sa.MetaData(), autoload_with=engine)
    with engine.connect() as c:
        rows = c.execute(sa.select(nation.c.name).where(nation.c.regionkey == sa.bindparam("r")).order_by(nation.c.name), {"r": 1}).fetchall()
    out["selected"] = [r[0] for r in rows]
elif client == "presto":
    import prestodb

    conn = prestodb.dbapi.connect(host=host, port=port, user="alice", catalog="tpch", schema="tiny")
    cur = conn.cursor()
    cur.execute("SELECT count(*) FROM nation")
    out["count"] = cur.fetchall()[0][0]
    cur.execute("SELECT orderkey FROM orders ORDER BY orderkey")
    keys = [r[0] for r in cur.fetchall()]
    out["orders"], out["ordered"] = len(keys), keys == sorted(keys)
else:
    sys.exit(f"unknown client {client}")
print(json.dumps(out))
