// Runs one scenario with one of the npm clients and prints what the client
// gave back as one line of JSON on stdout, for the Go test beside it
// (interop/node) to check: node clients.js CLIENT SERVER SCENARIO
// [CATALOG SCHEMA], where CLIENT is presto-client or trino-client, SERVER
// the base URL, SCENARIO one of query, pages, fail, syntax, cancel, nonodes,
// killed, draining (for the simulator), orders, missing (for the real servers), and CATALOG and
// SCHEMA the session's, by default hive and default.
'use strict';

const [client, server, scenario, catalog = 'hive', schema = 'default'] = process.argv.slice(2);

const statements = {
  query: 'SELECT 1',
  nonodes: 'SELECT 1',
  pages: 'SELECT * FROM rows(120)',
  fail: "SELECT fail('boom')",
  syntax: 'SELECT syntax(1, 8)',
  cancel: 'SELECT * FROM rows(3) WHERE sleep(10000)',
  // trino-client's iterator hands out only pages with rows (it polls
  // through the others itself), so its cancel comes after a first page.
  cancelAfterRows: 'SELECT * FROM rows(1000) WHERE slow(20)',
  // The real servers, in tpch.tiny: 15,000 rows, and a missing table.
  orders: 'SELECT orderkey FROM orders ORDER BY orderkey',
  missing: 'SELECT * FROM no_such_table',
  // A result whose pages keep coming until the test stops the
  // coordinator under it.
  killed: 'SELECT * FROM rows(1000000) WHERE slow(100)',
  draining: 'SELECT 1',
};

function report(result) {
  process.stdout.write(JSON.stringify(result) + '\n');
}

function runPresto() {
  const presto = require('presto-client');
  const url = new URL(server);
  const c = new presto.Client({
    host: url.hostname,
    port: Number(url.port),
    user: 'alice',
    catalog,
    schema,
    // The default waits 800 ms between polls; the simulator answers at once.
    checkInterval: 1,
    // It sends a statement refused with 503 again until this timeout (in
    // seconds): through a draining gateway, it ends in it.
    timeout: scenario === 'draining' ? 2 : 20,
  });
  const result = { rows: [], states: [] };
  let running = false;
  c.execute({
    query: statements[scenario],
    state: (error, queryId, stats) => {
      result.queryId = queryId;
      result.states.push(stats.state);
      if (stats.state === 'RUNNING') running = true;
    },
    columns: (error, columns) => { result.columns = columns.map((col) => col.name); },
    data: (error, data) => { result.rows.push(...data); },
    // presto-client asks before each poll; once the query runs, the
    // cancel scenario stops it (presto-client sends DELETE on nextUri).
    cancel: () => scenario === 'cancel' && running,
    success: (error, stats) => { result.final = stats.state; report(result); },
    error: (error) => { result.error = error; report(result); },
  });
}

async function runTrino() {
  const { Trino } = require('trino-client');
  const trino = Trino.create({ server, catalog, schema, auth: { type: 'basic', username: 'alice' } });
  const result = { rows: [], states: [] };
  try {
    const iter = await trino.query(statements[scenario === 'cancel' ? 'cancelAfterRows' : scenario]);
    for await (const page of iter) {
      result.queryId = page.id;
      result.states.push(page.stats && page.stats.state);
      if (page.columns && !result.columns) result.columns = page.columns.map((col) => col.name);
      if (page.data) result.rows.push(...page.data);
      if (page.error) result.error = page.error;
      if (scenario === 'cancel' && !result.cancelled) {
        // trino-client cancels with DELETE /v1/query/{id}, then goes on
        // polling until the coordinator says the query ended.
        await trino.cancel(page.id);
        result.cancelled = true;
      }
    }
  } catch (e) {
    result.thrown = { message: e.message, status: e.response && e.response.status, data: e.response && e.response.data };
  }
  report(result);
}

if (client === 'presto-client') {
  runPresto();
} else if (client === 'trino-client') {
  runTrino();
} else {
  process.stderr.write('unknown client ' + client + '\n');
  process.exit(2);
}
