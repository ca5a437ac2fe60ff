"""Runs SELECT current_user with trino-python-client's JWTAuthentication
against a coordinator (or the gateway) at host:port over https, and prints
{"user": ...} or, when the server refuses, {"error": ...} as JSON for
jwt_test.go.

usage: python_jwt.py HOST PORT CA_FILE   (the token in ZKPRESTO_JWT)
"""
import json
import os
import sys

import trino

host, port, ca = sys.argv[1], int(sys.argv[2]), sys.argv[3]
# requests lets these override a session's verify (merge_environment_settings):
# the CA given is the one to trust.
for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
    os.environ.pop(name, None)
conn = trino.dbapi.connect(
    host=host,
    port=port,
    user="alice",
    catalog="tpch",
    schema="tiny",
    http_scheme="https",
    verify=ca,
    auth=trino.auth.JWTAuthentication(os.environ["ZKPRESTO_JWT"]),
)
try:
    cur = conn.cursor()
    cur.execute("SELECT current_user")
    print(json.dumps({"user": cur.fetchall()[0][0]}))
except Exception as e:  # the server's refusal, as the client reports it
    print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
