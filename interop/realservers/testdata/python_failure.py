"""Runs SQL through the gateway at host:port with trino-python-client's
DB-API, reading every row, and prints one line of JSON: the rows read and,
when the query fails, the exception's class and text, as a program's user
would see them.

usage: python_failure.py HOST PORT SQL
"""
import json
import sys

import trino

host, port, sql = sys.argv[1], int(sys.argv[2]), sys.argv[3]
conn = trino.dbapi.connect(host=host, port=port, user="alice", catalog="hive", schema="default", http_scheme="http")
cur = conn.cursor()
out = {"rows": 0}
try:
    cur.execute(sql)
    for _ in cur:
        out["rows"] += 1
except Exception as e:  # what the user sees is what is under test
    out["error"] = type(e).__name__
    out["message"] = str(e)
print(json.dumps(out), flush=True)
