#!/usr/bin/env node
// Loopback Cosmos DB (NoSQL API) server for the agentstate-cosmosdb tests and benchmark.
//
// Wraps @vercel/cosmosdb-server 1.0.1 and patches, here and only here, the gaps that matter to a
// checkpoint saver, so that it behaves like the real service:
//
//   * a point read of a missing document answers 404 NotFound (the package throws and answers 500);
//   * a document write whose body exceeds 2 MiB answers 413 RequestEntityTooLarge, as Cosmos DB
//     does for items over its 2 MB limit (the package accepts anything);
//   * connections are kept alive (`keepAlive: true`), as with the real service.
//
//   * a transactional batch is atomic (all operations apply or none), takes the partition key
//     from the request header, honours each operation's ifMatch, and answers 207 Multi-Status
//     with the failing operation's status and 424 for the others, as Cosmos DB does (the
//     package applies operations one by one, keeps the ones before a failure, and rejects a
//     batch whose operations carry no partition key, which is how the SDK sends them).
//
// OFFSET ... LIMIT is left as it is: the saver does not use it.
//
// Test-only control endpoints (never part of the Cosmos API), under /_agentstate/:
//   POST /_agentstate/throttle {"count": n, "retryAfterMs": ms}  the next n data-plane requests
//                                                                answer 429 TooManyRequests
//   POST /_agentstate/outage {"ms": n}                           stop listening and drop every
//                                                                connection for n ms, then listen
//                                                                again on the same port (the data
//                                                                is kept, as in a service outage)
//   GET  /_agentstate/stats                                       requests served, by kind
//   POST /_agentstate/stats/reset                                 zero the counters
//
// Usage: node launch.mjs --port 8081 --host 127.0.0.1 --cert cert.pem --key key.pem
// Prints one line "READY https://host:port" on stdout once it accepts connections.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const MAX_ITEM_BYTES = 2 * 1024 * 1024;

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
    if (failedAt < 0) return results;
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

function main() {
  const args = parseArgs(process.argv.slice(2));
  patchMissingDocumentRead();
  patchTransactionalBatch();
  const { createHttpsServer } = require("@vercel/cosmosdb-server");

  const stats = {};
  const throttle = { remaining: 0, retryAfterMs: 10 };

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
