"""Starts a query through the gateway at host:port with trino-python-client,
reads its first row, prints READY, waits for a line on standard input (the
test stops the query's coordinator meanwhile), then cancels the query and
prints CANCELLED. The cancel raises on any answer but 204, which fails the
script.

usage: python_cancel.py HOST PORT
"""
import sys

import trino

host, port = sys.argv[1], int(sys.argv[2])
conn = trino.dbapi.connect(host=host, port=port, user="alice", catalog="hive", http_scheme="http")
cur = conn.cursor()
cur.execute("SELECT * FROM rows(100)")
cur.fetchone()
print("READY", flush=True)
sys.stdin.readline()
cur.cancel()
print("CANCELLED", flush=True)
