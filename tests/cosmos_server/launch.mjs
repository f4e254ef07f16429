#!/usr/bin/env node
// Loopback Cosmos DB (NoSQL API) server for the agentstate-cosmosdb tests and benchmarks.
//
// Wraps @vercel/cosmosdb-server 1.0.1 and patches, here and only here, the gaps that matter to a
// checkpoint saver, so that it behaves like the real service. Each patch names the service
// documentation it imitates:
//
//   * A point read of a missing document answers 404 NotFound (the package throws and answers
//     500). REST API, "Get a Document": https://learn.microsoft.com/rest/api/cosmos-db/get-a-document
//   * A document write whose body exceeds 2 MiB answers 413 RequestEntityTooLarge: "Maximum size
//     of an item: 2 MB (UTF-8 length of JSON representation)", service quotas,
//     https://learn.microsoft.com/azure/cosmos-db/concepts-limits
//   * A transactional batch is atomic (all operations apply or none), takes the partition key
//     from the request header, honours each operation's ifMatch, and answers 207 Multi-Status
//     with the failing operation's status and 424 for the others; at most 100 operations and a
//     2 MB payload (413 past it; `/_agentstate/limits` lowers the limit to prove the saver's
//     fall-back). https://learn.microsoft.com/azure/cosmos-db/transactional-batch ("the
//     payload can't exceed 2 MB ... 100 operations"); the azure-cosmos README gives 1.2 MB.
//   * `Prefer: return=minimal` (what the SDK sends for `no_response_on_write` /
//     `no_response=True`) makes a write answer with headers (etag) and an empty body:
//     "EnableContentResponseOnWrite ... only return the headers and status code ... for write
//     item operations like Create, Upsert, Patch and Replace",
//     https://learn.microsoft.com/dotnet/api/microsoft.azure.cosmos.itemrequestoptions.enablecontentresponseonwrite;
//     in a transactional batch each write's result then carries its status and etag only
//     (https://learn.microsoft.com/dotnet/api/microsoft.azure.cosmos.transactionalbatchitemrequestoptions.enablecontentresponseonwrite)
//   * Time to live: in a container whose `defaultTtl` is set (-1 or n), an item expires `ttl`
//     (else `defaultTtl`) seconds after its last write and is no longer returned by any read or
//     query; with `defaultTtl` absent (null) item `ttl` fields are ignored. "If the container
//     has no TTL set, then the TTL on an item has no effect", time to live,
//     https://learn.microsoft.com/azure/cosmos-db/time-to-live (expired items are removed
//     before each request; `/_agentstate/clock` moves the server's clock forward: the clock
//     that expires items and the one that stamps `_ts` on every write, so documents written
//     after a move are newer, as they would be on a service whose time passed).
//   * Microsoft Entra (AAD) tokens may not create or replace databases and containers (403):
//     "This permission model covers only database operations that involve reading and writing
//     data. It does not cover ... Create/Replace/Delete Database, Create/Replace/Delete
//     Container", https://learn.microsoft.com/azure/cosmos-db/how-to-setup-rbac
//   * A query with a partition key header reads that logical partition only (see
//     patchPartitionQuery), as the service routes single-partition queries.
//   * Connections are kept alive (`keepAlive: true`), as with the real service.
//
// OFFSET ... LIMIT is left as it is: the saver does not use it. Requests are not charged; the
// stats report an *estimate* of request units from the published figures (see estimateRu).
//
// Test-only control endpoints (never part of the Cosmos API), under /_agentstate/:
//   POST /_agentstate/throttle {"count": n, "retryAfterMs": ms}  the next n data-plane requests
//                                                                answer 429 TooManyRequests
//   POST /_agentstate/outage {"ms": n}                           stop listening and drop every
//                                                                connection for n ms, then listen
//                                                                again on the same port (the data
//                                                                is kept, as in a service outage)
//   POST /_agentstate/fail {"after": n, "count": k}              after n more data-plane requests,
//                                                                the next k answer 503 and leave
//                                                                the data untouched (a process or
//                                                                network dying mid-operation)
//   POST /_agentstate/limits {"batchBytes": n}                   refuse batches over n bytes (413)
//   POST /_agentstate/clock {"advance": s}                       move the server clock s seconds on
//   GET  /_agentstate/stats                                       requests served, by kind, bytes
//                                                                in and out, estimated RUs
//   POST /_agentstate/stats/reset                                 zero the counters
//
// Usage: node launch.mjs --port 8081 --host 127.0.0.1 --cert cert.pem --key key.pem
// Prints one line "READY https://host:port" on stdout once it accepts connections.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const MAX_ITEM_BYTES = 2 * 1024 * 1024;
const limits = { batchBytes: 2 * 1024 * 1024 };
const clock = { offset: 0 };
// The server's clock: the package stamps `_ts` from Date.now(), and so does the TTL sweep.
const realNow = Date.now;
Date.now = () => realNow() + clock.offset * 1000;
let theAccount = null;

// The package builds its account when the server starts listening; keep a handle on it so that
// expired items can be swept.
function captureAccount() {
  const mod = require("@vercel/cosmosdb-server/lib/account/index.js");
  const Original = mod.default;
  mod.default = class extends Original {
    constructor(...args) {
      super(...args);
      theAccount = this;
    }
  };
}

function nowSeconds() {
  return Math.floor(Date.now() / 1000);
}

// Time to live (see the header): remove every expired item of every container with a default TTL.
function sweepExpired() {
  if (!theAccount) return;
  const now = nowSeconds();
  for (const db of theAccount.databases._data.values()) {
    for (const coll of db.collections._data.values()) {
      const props = coll.read();
      if (!props || props.defaultTtl === undefined || props.defaultTtl === null) continue;
      const docs = coll.documents;
      for (const item of [...docs._data.values()]) {
        const doc = item.read();
        if (!doc) continue;
        const ttl = doc.ttl !== undefined && doc.ttl !== null ? doc.ttl : props.defaultTtl;
        if (ttl > 0 && doc._ts + ttl <= now) docs.delete(doc.id, docs._getPartition(doc));
      }
    }
  }
}

// Estimated request units, from "Optimize reads and writes cost in Azure Cosmos DB"
// (https://learn.microsoft.com/azure/cosmos-db/optimize-cost-reads-writes): a point read of a
// 1 KB item costs 1 RU and of a 100 KB item 10 RU; a write of 1 KB costs 5 RU and of 100 KB
// 50 RU. Sizes in between are interpolated linearly, smaller ones round up to 1 KB. Queries are
// estimated as 2.5 RU plus a point read of the bytes they return (the query engine's cost
// depends on the index; this is a rough figure). It is an estimate, not the service's charge.
function readRu(bytes) {
  const kb = Math.max(1, bytes / 1024);
  return 1 + ((kb - 1) * 9) / 99;
}
function writeRu(bytes) {
  const kb = Math.max(1, bytes / 1024);
  return 5 + ((kb - 1) * 45) / 99;
}

function parseArgs(argv) {
  const args = { host: "127.0.0.1", port: 0, cert: null, key: null };
  for (let i = 0; i < argv.length; i += 1) {
    const name = argv[i];
    const value = argv[i + 1];
    if (name === "--port") args.port = Number.parseInt(value, 10);
    else if (name === "--host") args.host = value;
    else if (name === "--cert") args.cert = value;
    else if (name === "--key") args.key = value;
    else throw new Error(`unknown argument ${JSON.stringify(name)}`);
    i += 1;
  }
  if (!args.cert || !args.key) {
    throw new Error("--cert and --key are required (PEM files for 127.0.0.1/localhost)");
  }
  return args;
}

// The route table captures each handler when routes.js loads, so the read handler must be
// replaced before the package's entry point is required.
function patchMissingDocumentRead() {
  const readDocument = require("@vercel/cosmosdb-server/lib/handler/read-document.js");
  const original = readDocument.default;
  readDocument.default = (account, req, res, params) => {
    try {
      return original(account, req, res, params);
    } catch (err) {
      // The package dereferences the missing document before checking it (a TypeError).
      if (err instanceof TypeError) {
        res.statusCode = 404;
        return {
          code: "NotFound",
          message: "Entity with the specified id does not exist in the system.",
        };
      }
      throw err;
    }
  };
}

// A query sent with a partition key header reads that logical partition only, as the service
// routes a single-partition query to the physical partition that holds the key ("if the query
// has a partition key filter specified, Azure Cosmos DB ... routes the query to the physical
// partitions corresponding to the partition key values", query a container,
// https://learn.microsoft.com/azure/cosmos-db/how-to-query-container). The package
// scans the whole container for every query, which makes query latency grow with the container
// instead of the thread.
function patchPartitionQuery() {
  const handler = require("@vercel/cosmosdb-server/lib/handler/query-documents.js");
  const readItems = require("@vercel/cosmosdb-server/lib/handler/_read-items.js").default;
  const json = require("@vercel/cosmosdb-server/lib/json.js").default;
  const { parsePartitionKey } = require("@vercel/cosmosdb-server/lib/utils/get-partition-from-header.js");
  const original = handler.default;
  handler.default = (account, req, res, params) => {
    const header = req.headers["x-ms-documentdb-partitionkey"];
    if (!header) return original(account, req, res, params);
    return readItems(req, res, "Documents", async ({ continuation, maxItemCount }) => {
      const body = await json(req);
      if (!body.query) {
        res.statusCode = 400;
        return { message: "missing query" };
      }
      const docs = account.database(params.dbId).collection(params.collId).documents;
      if (!docs._parent.read()) return null;
      const key = parsePartitionKey(header);
      const data = [...docs._data.values()]
        .map((item) => item.read())
        .filter((doc) => doc && String(docs._getPartition(doc)) === String(key));
      try {
        return docs._getQuery(body.query).exec(data, {
          parameters: body.parameters,
          udf: null,
          maxItemCount,
          continuation,
          compositeIndexes: [],
        });
      } catch (err) {
        res.statusCode = 400;
        return { message: err.message };
      }
    });
  };
}

function patchTransactionalBatch() {
  const batch = require("@vercel/cosmosdb-server/lib/handler/batch-documents.js");
  const ops = require("@vercel/cosmosdb-server/lib/handler/_document-operations.js");
  const { parsePartitionKey } = require("@vercel/cosmosdb-server/lib/utils/get-partition-from-header.js");
  const json = require("@vercel/cosmosdb-server/lib/json.js").default;
  const run = {
    Create: ops.createOperation,
    Upsert: ops.upsertOperation,
    Read: ops.readOperation,
    Delete: ops.deleteOperation,
    Replace: ops.replaceOperation,
  };
  batch.default = async (account, req, res, { dbId, collId }) => {
    const body = await json(req);
    const collection = account.database(dbId).collection(collId);
    if (!collection.read()) {
      res.statusCode = 404;
      return { code: "NotFound", message: "collection not found" };
    }
    if (!Array.isArray(body) || body.length === 0 || body.length > 100) {
      res.statusCode = 400;
      return { code: "BadRequest", message: "a batch holds 1 to 100 operations" };
    }
    const headerKey = req.headers["x-ms-documentdb-partitionkey"];
    req.agentstateRu = body.reduce(
      (sum, op) =>
        sum +
        (op.operationType === "Read"
          ? readRu(1024)
          : writeRu(op.resourceBody ? Buffer.byteLength(JSON.stringify(op.resourceBody)) : 1024)),
      0,
    );
    const undo = [];
    const results = [];
    let failedAt = -1;
    for (let i = 0; i < body.length; i += 1) {
      const op = body[i] || {};
      const handler = run[op.operationType];
      if (!handler) {
        res.statusCode = 400;
        return { code: "BadRequest", message: `operation ${op.operationType} not supported` };
      }
      const partitionKey = op.partitionKey ?? headerKey;
      const id = op.id ?? (op.resourceBody || {}).id;
      const key = parsePartitionKey(partitionKey, id);
      const before = collection.document(id, key).read();
      if (op.ifMatch && op.operationType === "Read" && before && before._etag !== op.ifMatch) {
        failedAt = i;
        results.push({ statusCode: 412, requestCharge: 0 });
        break;
      }
      const result = handler(collection, { ...op, id, partitionKey });
      if (result.statusCode >= 400) {
        failedAt = i;
        results.push({ statusCode: result.statusCode, requestCharge: 0 });
        break;
      }
      undo.push([id, key, before]);
      results.push({
        statusCode: result.statusCode,
        requestCharge: 1,
        eTag: result.body ? result.body._etag : undefined,
        resourceBody: result.body,
      });
    }
    if (failedAt < 0) {
      // Prefer: return=minimal applies to the batch's writes too: status and etag, no body
      // (TransactionalBatchItemRequestOptions.EnableContentResponseOnWrite, see the header).
      if (String(req.headers.prefer || "").includes("return=minimal")) {
        return results.map(({ resourceBody, ...rest }, i) =>
          body[i].operationType === "Read" ? { ...rest, resourceBody } : rest,
        );
      }
      return results;
    }
    for (const [id, key, before] of undo.reverse()) {
      if (collection.document(id, key).read()) collection.documents.delete(id, key);
      if (before) collection.documents._set(before);
    }
    res.statusCode = 207;
    return body.map((_, i) =>
      i === failedAt ? results[failedAt] : { statusCode: 424, requestCharge: 0 },
    );
  };
}

// Bytes on the wire, counted by the server for data-plane requests: the request line, headers
// and body received, the status line, headers and body sent (TLS framing not included).
function countBytes(req, res, kind, stats) {
  let inBytes = `${req.method} ${req.url} HTTP/1.1\r\n`.length + 2;
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    inBytes += req.rawHeaders[i].length + req.rawHeaders[i + 1].length + 4;
  }
  inBytes += Number.parseInt(req.headers["content-length"] || "0", 10);
  stats.bytes_in = (stats.bytes_in || 0) + inBytes;
  const minimal = String(req.headers.prefer || "").includes("return=minimal");
  const isWrite = ["create", "upsert", "replace", "patch"].includes(kind);
  let outBody = 0;
  const write = res.write.bind(res);
  const end = res.end.bind(res);
  const size = (chunk) => (chunk ? Buffer.byteLength(chunk) : 0);
  res.write = (chunk, ...rest) => {
    outBody += size(chunk);
    return write(chunk, ...rest);
  };
  res.end = (chunk, ...rest) => {
    // Prefer: return=minimal (see the header): headers and status only.
    if (minimal && isWrite && res.statusCode < 300 && chunk) {
      res.setHeader("content-length", "0");
      chunk = "";
    }
    outBody += size(chunk);
    let headerBytes = `HTTP/1.1 ${res.statusCode} OK\r\n`.length + 2;
    for (const [k, v] of Object.entries(res.getHeaders())) headerBytes += k.length + String(v).length + 4;
    stats.bytes_out = (stats.bytes_out || 0) + headerBytes + outBody;
    let ru = 0;
    if (res.statusCode < 400) {
      const reqBytes = Number.parseInt(req.headers["content-length"] || "0", 10);
      if (kind === "read") ru = readRu(outBody);
      else if (kind === "query") ru = 2.5 + readRu(outBody);
      else if (isWrite) ru = writeRu(reqBytes);
      else if (kind === "delete") ru = writeRu(1024);
      else if (kind === "batch") ru = req.agentstateRu || writeRu(reqBytes);
    }
    stats.ru_estimate = (stats.ru_estimate || 0) + ru;
    return end(chunk, ...rest);
  };
}

function sendJson(res, status, body, headers = {}) {
  res.statusCode = status;
  res.setHeader("content-type", "application/json");
  res.setHeader("connection", "keep-alive");
  res.setHeader("x-ms-activity-id", "00000000-0000-0000-0000-000000000000");
  res.setHeader("x-ms-request-charge", "0");
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.end(JSON.stringify(body));
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function requestKind(req) {
  const path = (req.url || "").split("?")[0];
  const isDoc = /\/docs\/[^/]+\/?$/.test(path);
  const isDocs = /\/docs\/?$/.test(path);
  const header = (name) => String(req.headers[name] || "").toLowerCase() === "true";
  if (req.method === "POST" && isDocs) {
    if (header("x-ms-documentdb-isquery") || req.headers["content-type"] === "application/query+json")
      return "query";
    if (header("x-ms-cosmos-is-batch-request")) return "batch";
    return header("x-ms-documentdb-is-upsert") ? "upsert" : "create";
  }
  if (isDoc) {
    return { GET: "read", PUT: "replace", DELETE: "delete", PATCH: "patch" }[req.method] || "other";
  }
  return "other";
}

function isAadToken(req) {
  return decodeURIComponent(String(req.headers.authorization || "")).includes("type=aad");
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  captureAccount();
  patchMissingDocumentRead();
  patchPartitionQuery();
  patchTransactionalBatch();
  const { createHttpsServer } = require("@vercel/cosmosdb-server");

  const stats = {};
  const throttle = { remaining: 0, retryAfterMs: 10 };
  const fail = { after: -1, remaining: 0 };

  const server = createHttpsServer({
    cert: readFileSync(args.cert),
    key: readFileSync(args.key),
    keepAlive: true,
  });
  server.keepAliveTimeout = 60_000;
  const [packageHandler] = server.listeners("request");
  server.removeAllListeners("request");

  server.on("request", async (req, res) => {
    const url = req.url || "";
    if (url.startsWith("/_agentstate/")) {
      try {
        const body = req.method === "POST" ? await readBody(req) : "";
        if (url === "/_agentstate/throttle" && req.method === "POST") {
          const opts = body ? JSON.parse(body) : {};
          throttle.remaining = Number(opts.count ?? 1);
          throttle.retryAfterMs = Number(opts.retryAfterMs ?? 10);
          sendJson(res, 200, { ...throttle });
        } else if (url === "/_agentstate/outage" && req.method === "POST") {
          const opts = body ? JSON.parse(body) : {};
          const ms = Number(opts.ms ?? 1000);
          res.on("finish", () => outage(ms));
          sendJson(res, 200, { ms }, { connection: "close" });
        } else if (url === "/_agentstate/fail" && req.method === "POST") {
          const opts = body ? JSON.parse(body) : {};
          fail.after = Number(opts.after ?? 0);
          fail.remaining = Number(opts.count ?? 1_000_000);
          sendJson(res, 200, { ...fail });
        } else if (url === "/_agentstate/limits" && req.method === "POST") {
          const opts = body ? JSON.parse(body) : {};
          limits.batchBytes = Number(opts.batchBytes ?? 2 * 1024 * 1024);
          sendJson(res, 200, { ...limits });
        } else if (url === "/_agentstate/clock" && req.method === "POST") {
          const opts = body ? JSON.parse(body) : {};
          clock.offset += Number(opts.advance ?? 0);
          sendJson(res, 200, { ...clock });
        } else if (url === "/_agentstate/stats" && req.method === "GET") {
          sendJson(res, 200, { ...stats });
        } else if (url === "/_agentstate/stats/reset" && req.method === "POST") {
          for (const k of Object.keys(stats)) delete stats[k];
          sendJson(res, 200, {});
        } else {
          sendJson(res, 404, { message: `no control endpoint ${url}` });
        }
      } catch (err) {
        sendJson(res, 400, { message: String(err) });
      }
      return;
    }

    const kind = requestKind(req);
    stats[kind] = (stats[kind] || 0) + 1;
    stats.total = (stats.total || 0) + 1;
    countBytes(req, res, kind, stats);
    sweepExpired();

    if (fail.after >= 0 && kind !== "other") {
      if (fail.after > 0) {
        fail.after -= 1;
      } else if (fail.remaining > 0) {
        fail.remaining -= 1;
        stats.failed = (stats.failed || 0) + 1;
        await readBody(req);
        sendJson(res, 503, {
          code: "ServiceUnavailable",
          message: "injected by launch.mjs: the service is unavailable",
        });
        return;
      }
    }

    const controlPlane =
      (req.method === "POST" && /^\/dbs\/?$/.test(url.split("?")[0])) ||
      (req.method === "POST" && /\/colls\/?$/.test(url.split("?")[0])) ||
      (req.method === "PUT" && /\/colls\/[^/]+\/?$/.test(url.split("?")[0]));
    if (controlPlane && isAadToken(req)) {
      await readBody(req);
      sendJson(res, 403, {
        code: "Forbidden",
        message:
          "Request blocked by Auth: the Microsoft Entra identity may not perform management " +
          "operations (create/replace database or container) through the data plane.",
      });
      return;
    }

    if (throttle.remaining > 0 && kind !== "other") {
      throttle.remaining -= 1;
      stats.throttled = (stats.throttled || 0) + 1;
      // Drain the body first so the kept-alive connection stays usable.
      await readBody(req);
      sendJson(
        res,
        429,
        { code: "TooManyRequests", message: "Request rate is large (injected by launch.mjs)." },
        { "x-ms-retry-after-ms": String(throttle.retryAfterMs), "x-ms-substatus": "3200" },
      );
      return;
    }

    const length = Number.parseInt(req.headers["content-length"] || "0", 10);
    const writes = ["create", "upsert", "replace", "batch"];
    if (kind === "batch" && length > limits.batchBytes) {
      await readBody(req);
      sendJson(res, 413, { code: "RequestEntityTooLarge", message: "Request size is too large" });
      return;
    }
    if (writes.includes(kind) && length > MAX_ITEM_BYTES) {
      await readBody(req);
      sendJson(res, 413, { code: "RequestEntityTooLarge", message: "Request size is too large" });
      return;
    }
    packageHandler(req, res);
  });

  const sockets = new Set();
  server.on("secureConnection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  let port = args.port;
  const outage = (ms) => {
    server.close();
    for (const socket of sockets) socket.destroy();
    setTimeout(() => server.listen(port, args.host), ms);
  };

  server.listen(args.port, args.host, () => {
    // The package builds its in-memory account on every "listening" event; keep the first one
    // so that listening again after an outage keeps the data.
    server.removeAllListeners("listening");
    port = server.address().port;
    process.stdout.write(`READY https://${args.host}:${port}\n`);
  });

  const stop = () => {
    server.close();
    server.closeAllConnections?.();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

main();
