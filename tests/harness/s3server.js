// SPDX-License-Identifier: Apache-2.0
//
// Launcher for the npm S3 servers used by tests and benchmarks. The npm packages
// ship either a CLI without a port file (s3rver 3) or no CLI at all
// (@20minutes/s3rver 5), so the harness starts them through this file: it binds
// 127.0.0.1 on the given port (0 = any free one), pre-creates buckets, and writes
// the chosen port to --port-file (atomically: a temp file renamed into place), so
// the harness can ready-wait on it. SIGTERM/SIGINT exit 0.
//
//   node s3server.js --node-modules DIR --version 3|5 --dir DATA --port-file F
//                    [--port 0] [--bucket NAME]... [--access-key K --secret-key S]
//                    [--extra-key K:S]... [--verbose] [--no-conditional-writes]
//
// --extra-key adds a key pair beside the account's (S3RVER/S3RVER, or --access-key):
// tests of credentials given per request (s3(url, KEY, SECRET)) use a second pair.
//
// s3rver 3 needs NODE_OPTIONS=--openssl-legacy-provider (its ListObjectsV2
// continuation token uses DES); the harness sets it for both versions.
//
// Overwrites are made atomic, as in real S3: both packages write a PUT's body
// in place (truncating the live object) and its ETag afterwards, so a GET or
// HEAD racing the PUT could return old metadata with new or half-written
// bytes, a mixture no S3 ever serves. Here a PUT writes a temporary file and,
// under a per-key lock that metadata reads and GET opens also take, renames
// it into place and writes its metadata. A GET that already has the file open
// keeps reading the old bytes, as a GET of an overwritten S3 object does.
//
// Conditional writes, as AWS S3 answers them (neither package has them: both
// honour If-None-Match on GET only): PutObject and CompleteMultipartUpload
// with `If-None-Match: *` fail with 412 PreconditionFailed when the key exists,
// with `If-Match: ETAG` fail with 412 when the object's ETag differs and with
// 404 NoSuchKey when there is no object. The check runs under the same per-key
// lock as the commit, so of two writers racing for a new key exactly one wins.
// `--no-conditional-writes` turns them off again (a store that ignores the
// headers, for tests of the code that must detect one).
'use strict';

const { AsyncLocalStorage } = require('node:async_hooks');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

function usage(msg) {
  process.stderr.write(`s3server.js: ${msg}\n` +
    'usage: node s3server.js --node-modules DIR --version 3|5 --dir DATA ' +
    '--port-file F [--port 0] [--bucket NAME]... [--access-key K --secret-key S] [--verbose]\n' +
    '       [--extra-key K:S]... [--no-conditional-writes]\n');
  process.exit(2);
}

// A readers-preferring lock per key: reads (HEAD, GET open) share it, the
// commit of a PUT (rename + metadata) holds it alone. Reads nest (getObject
// calls getMetadata), which a waiting writer must not block.
// The request a store call runs for: a middleware put in front of the
// packages' own records the method and headers for the calls it makes.
const requestContext = new AsyncLocalStorage();

function etagOf(v) {
  return String(v).trim().replace(/^W\//, '').replace(/"/g, '');
}

// Throws the S3 error a conditional write fails with, or returns. `current`
// is the object's metadata (null when there is none).
function checkWriteConditions(S3Error, headers, current) {
  const ifNoneMatch = headers['if-none-match'];
  const ifMatch = headers['if-match'];
  if (ifNoneMatch !== undefined) {
    if (ifNoneMatch.trim() !== '*') {
      throw new S3Error('NotImplemented',
        'A header you provided implies functionality that is not implemented',
        { Header: 'If-None-Match' });
    }
    if (current) {
      throw new S3Error('PreconditionFailed',
        'At least one of the pre-conditions you specified did not hold',
        { Condition: 'If-None-Match' });
    }
  }
  if (ifMatch !== undefined) {
    if (!current) {
      throw new S3Error('NoSuchKey', 'The specified key does not exist.');
    }
    const want = ifMatch.split(',').map(etagOf);
    if (!want.includes('*') && !want.includes(etagOf(current.etag))) {
      throw new S3Error('PreconditionFailed',
        'At least one of the pre-conditions you specified did not hold',
        { Condition: 'If-Match' });
    }
  }
}

function atomicOverwrites(store, S3Error, conditional) {
  const locks = new Map();
  const slot = (k) => {
    let l = locks.get(k);
    if (!l) {
      l = { readers: 0, writer: false, queue: [] };
      locks.set(k, l);
    }
    return l;
  };
  const wakeAll = (k, l) => {
    const q = l.queue;
    l.queue = [];
    for (const w of q) w();
    if (!l.readers && !l.writer && !l.queue.length) locks.delete(k);
  };
  const acquire = async (k, write) => {
    for (;;) {
      const l = slot(k);
      if (write ? !l.writer && !l.readers : !l.writer) {
        if (write) l.writer = true;
        else l.readers++;
        return;
      }
      await new Promise((resolve) => l.queue.push(resolve));
    }
  };
  const release = (k, write) => {
    const l = locks.get(k);
    if (write) l.writer = false;
    else l.readers--;
    wakeAll(k, l);
  };
  const locked = (fn, write) => async (...args) => {
    const k = `${args[0]}/${args[1]}`;
    await acquire(k, write);
    try {
      return await fn(...args);
    } finally {
      release(k, write);
    }
  };
  const getMetadata = store.getMetadata.bind(store);
  const getObject = store.getObject.bind(store);
  const putMetadata = store.putMetadata.bind(store);
  const commit = locked(async (bucket, key, tmp, objectPath, metadata, md5) => {
    const req = requestContext.getStore();
    if (conditional && req && (req.method === 'PUT' || req.method === 'POST')) {
      const current = await getMetadata(bucket, key).catch(() => null);
      try {
        checkWriteConditions(S3Error, req.headers, current);
      } catch (err) {
        await fs.promises.rm(tmp, { force: true });
        throw err;
      }
    }
    await fs.promises.rename(tmp, objectPath);
    await putMetadata(bucket, key, metadata, md5);
  }, true);
  let seq = 0;
  store.getMetadata = locked(getMetadata, false);
  store.getObject = locked(getObject, false);
  store.putObject = async (object) => {
    const objectPath = store.getResourcePath(object.bucket, object.key, 'object');
    await fs.promises.mkdir(path.dirname(objectPath), { recursive: true });
    const tmp = `${objectPath}.tmp-${process.pid}-${++seq}`;
    const [size, md5] = await new Promise((resolve, reject) => {
      const out = fs.createWriteStream(tmp);
      const hash = crypto.createHash('md5');
      let total = 0;
      out.on('error', reject);
      out.on('close', () => resolve([total, hash.digest('hex')]));
      if (Buffer.isBuffer(object.content)) {
        hash.update(object.content);
        total = object.content.length;
        out.end(object.content);
      } else {
        object.content.on('error', (err) => {
          out.destroy();
          reject(err);
        });
        object.content.on('data', (chunk) => {
          hash.update(chunk);
          total += chunk.length;
        });
        object.content.pipe(out);
      }
    }).catch(async (err) => {
      await fs.promises.rm(tmp, { force: true });
      throw err;
    });
    await commit(object.bucket, object.key, tmp, objectPath, object.metadata, md5);
    return { size, md5 };
  };
}

function parseArgs(argv) {
  const o = { port: 0, buckets: [], extraKeys: [], version: '3', verbose: false, conditional: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case '--node-modules': o.nodeModules = val(); break;
      case '--version': o.version = val(); break;
      case '--dir': o.dir = val(); break;
      case '--port-file': o.portFile = val(); break;
      case '--port': o.port = Number(val()); break;
      case '--bucket': o.buckets.push(val()); break;
      case '--access-key': o.accessKey = val(); break;
      case '--secret-key': o.secretKey = val(); break;
      case '--extra-key': {
        const v = val();
        const at = v.indexOf(':');
        if (at <= 0 || at === v.length - 1) usage(`--extra-key takes KEY:SECRET, not ${v}`);
        o.extraKeys.push([v.slice(0, at), v.slice(at + 1)]);
        break;
      }
      case '--verbose': o.verbose = true; break;
      case '--no-conditional-writes': o.conditional = false; break;
      default: usage(`unknown flag ${a}`);
    }
  }
  if (!o.nodeModules) usage('--node-modules is required');
  if (!o.dir) usage('--dir is required');
  if (!o.portFile) usage('--port-file is required');
  if (o.version !== '3' && o.version !== '5') usage(`--version must be 3 or 5, not ${o.version}`);
  if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65535) usage('--port must be 0..65535');
  if ((o.accessKey === undefined) !== (o.secretKey === undefined)) {
    usage('--access-key and --secret-key go together');
  }
  return o;
}

async function main() {
  // Before anything else: a SIGTERM right after the port file appears must
  // still exit 0 (the harness asserts a clean exit).
  const stop = () => process.exit(0);
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const o = parseArgs(process.argv.slice(2));
  const pkg = o.version === '3' ? 's3rver' : path.join('@20minutes', 's3rver');
  const pkgDir = path.join(o.nodeModules, pkg);
  let S3rver;
  try {
    S3rver = require(pkgDir);
  } catch (err) {
    process.stderr.write(`s3server.js: cannot load ${pkgDir}: ${err.message} ` +
      '(run npm ci in the source folder, or set RINGCACHE_NODE_MODULES)\n');
    process.exit(3);
  }
  if (o.extraKeys.length) {
    // More key pairs on the same account, beside the default (or --access-key) one.
    const account = require(path.join(pkgDir, 'lib', 'models', 'account.js'));
    for (const [k, s] of o.extraKeys) account.DUMMY_ACCOUNT.createKeyPair(k, s);
  }
  if (o.accessKey !== undefined) {
    // Both versions keep credentials in lib/models/account.js; the default
    // account holds S3RVER/S3RVER. Replace that key with the one asked for.
    const account = require(path.join(pkgDir, 'lib', 'models', 'account.js'));
    account.DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
    account.DUMMY_ACCOUNT.createKeyPair(o.accessKey, o.secretKey);
  }
  fs.mkdirSync(o.dir, { recursive: true });
  const server = new S3rver({
    address: '127.0.0.1',
    port: o.port,
    directory: o.dir,
    silent: !o.verbose,
    configureBuckets: o.buckets.map((name) => ({ name })),
  });
  const S3Error = require(path.join(pkgDir, 'lib', 'models', 'error.js'));
  atomicOverwrites(server.store, S3Error, o.conditional);
  // First in the chain (Koa composes its middleware when the server starts).
  server.middleware.unshift((ctx, next) =>
    requestContext.run({ method: ctx.method, headers: ctx.headers }, next));
  const addr = await server.run();
  const tmp = `${o.portFile}.tmp`;
  fs.writeFileSync(tmp, `${addr.port}\n`);
  fs.renameSync(tmp, o.portFile);
  process.stdout.write(`s3server.js: s3rver ${o.version} listening on 127.0.0.1:${addr.port} ` +
    `data=${o.dir} buckets=${o.buckets.join(',')}\n`);
}

main().catch((err) => {
  process.stderr.write(`s3server.js: ${err.stack || err}\n`);
  process.exit(1);
});
