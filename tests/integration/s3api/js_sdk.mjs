// SPDX-License-Identifier: Apache-2.0
//
// js_sdk.mjs: @aws-sdk/client-s3 (pinned in package.json) against a cache
// node's S3 API, with the SDK's default checksum settings, driven by
// test_s3api_node.c. A Buffer body goes with an x-amz-checksum-crc32 header;
// a stream body goes as aws-chunked (STREAMING-UNSIGNED-PAYLOAD-TRAILER) with
// the CRC32 in a trailer; a multipart upload streams each part the same way.
// Each step prints "ok <step>"; any failure throws, so the exit status says.
//
//   node js_sdk.mjs URL KEY SECRET BUCKET
import { Readable } from 'node:stream';
import {
  S3Client, PutObjectCommand, GetObjectCommand, CreateMultipartUploadCommand,
  UploadPartCommand, CompleteMultipartUploadCommand, HeadObjectCommand,
} from '@aws-sdk/client-s3';

const [url, accessKeyId, secretAccessKey, bucket] = process.argv.slice(2);
const s3 = new S3Client({
  endpoint: url, region: 'us-east-1', forcePathStyle: true,
  credentials: { accessKeyId, secretAccessKey },
});

function data(n, seed) {
  const b = Buffer.alloc(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    b[i] = x & 0xff;
  }
  return b;
}

// a stream whose chunks are of uneven sizes, as sockets and pipes give them
function streamOf(buf) {
  const sizes = [1, 7000, 65536, 100000];
  let off = 0, i = 0;
  return new Readable({
    read() {
      if (off >= buf.length) { this.push(null); return; }
      const n = Math.min(sizes[i++ % sizes.length], buf.length - off);
      this.push(buf.subarray(off, off + n));
      off += n;
    },
  });
}

async function body(key) {
  const r = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return Buffer.from(await r.Body.transformToByteArray());
}

function ok(step) { console.log('ok', step); }

const small = data(300000, 1);
await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 't/js/buffer.bin', Body: small }));
if (!(await body('t/js/buffer.bin')).equals(small)) throw new Error('buffer PUT read back differs');
ok('put_buffer');

const streamed = data(3 * 1024 * 1024 + 5, 2);
const pr = await s3.send(new PutObjectCommand({
  Bucket: bucket, Key: 't/js/stream.bin', Body: streamOf(streamed), ContentLength: streamed.length,
}));
if (!pr.ETag) throw new Error('no ETag');
if (!(await body('t/js/stream.bin')).equals(streamed)) throw new Error('stream PUT read back differs');
ok('put_stream_trailer');

// a multipart upload: 5 MiB parts (S3's minimum) and a short last one, each a stream
const whole = data(11 * 1024 * 1024 + 333, 3);
const part = 5 * 1024 * 1024;
const { UploadId } = await s3.send(new CreateMultipartUploadCommand({
  Bucket: bucket, Key: 't/js/multi.bin', ChecksumAlgorithm: 'CRC32',
}));
const parts = [];
for (let n = 1, off = 0; off < whole.length; n++, off += part) {
  const chunk = whole.subarray(off, Math.min(off + part, whole.length));
  const r = await s3.send(new UploadPartCommand({
    Bucket: bucket, Key: 't/js/multi.bin', UploadId, PartNumber: n,
    Body: streamOf(chunk), ContentLength: chunk.length, ChecksumAlgorithm: 'CRC32',
  }));
  parts.push({ PartNumber: n, ETag: r.ETag, ChecksumCRC32: r.ChecksumCRC32 });
}
await s3.send(new CompleteMultipartUploadCommand({
  Bucket: bucket, Key: 't/js/multi.bin', UploadId, MultipartUpload: { Parts: parts },
}));
const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 't/js/multi.bin' }));
if (head.ContentLength !== whole.length) throw new Error(`multipart size ${head.ContentLength}`);
if (!(await body('t/js/multi.bin')).equals(whole)) throw new Error('multipart read back differs');
ok('multipart');

// a range, as the SDK sends it (with x-amz-checksum-mode: ENABLED)
const r = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: 't/js/multi.bin', Range: 'bytes=5242870-5242889' }));
const got = Buffer.from(await r.Body.transformToByteArray());
if (!got.equals(whole.subarray(5242870, 5242890))) throw new Error('range differs');
ok('get_range');
