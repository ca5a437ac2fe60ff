"""Runs one statement with a Python client's HTTP basic authentication over
https, trusting CAFILE, and prints its rows as JSON for password_test.go,
or the client's error as {"error": ...}.

usage: ZKPRESTO_PASSWORD=... python_password.py trino|presto HOST PORT CAFILE STATEMENT
  trino:  trino-python-client, trino.auth.BasicAuthentication, verify=CAFILE
  presto: presto-python-client, prestodb.auth.BasicAuthentication; the CA
          through REQUESTS_CA_BUNDLE, which requests reads (the client has
          no argument for it)
The password is read from the environment, not the command line.
"""
import json
import os
import sys

client, host, port, cafile, statement = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
user, password = "alice", os.environ["ZKPRESTO_PASSWORD"]
# requests prefers these to a session's verify (Session.merge_environment_settings),
# so with one of them set trino-python-client's verify=CAFILE would be ignored.
for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
    os.environ.pop(name, None)
if client == "trino":
    import trino

    conn = trino.dbapi.connect(
        host=host, port=port, user=user, catalog="tpch", schema="tiny", http_scheme="https",
        auth=trino.auth.BasicAuthentication(user, password), verify=cafile,
    )
elif client == "presto":
    import prestodb

    os.environ["REQUESTS_CA_BUNDLE"] = cafile
    conn = prestodb.dbapi.connect(
        host=host, port=port, user=user, catalog="tpch", schema="tiny", http_scheme="https",
        auth=prestodb.auth.BasicAuthentication(user, password),
    )
else:
    sys.exit(f"unknown client {client}")
try:
    cur = conn.cursor()
    cur.execute(statement)
    print(json.dumps({"rows": [[str(v) for v in r] for r in cur.fetchall()]}))
except Exception as e:  # the test reads the client's refusal
    print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
