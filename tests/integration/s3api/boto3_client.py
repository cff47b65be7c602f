# SPDX-License-Identifier: Apache-2.0
#
# boto3_client.py: Debian's boto3 (python3-boto3, run with /usr/bin/python3)
# against the S3 API pieces' stub (s3stub.c), driven by test_s3api_clients.c.
# Each step prints "ok <step>"; any failure raises, so the exit status says.
#
#   /usr/bin/python3 boto3_client.py HTTP_URL HTTPS_URL CA_FILE KEY SECRET BUCKET WORKDIR
import filecmp
import os
import sys
import urllib.request

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

http_url, https_url, ca, akid, secret, bucket, work = sys.argv[1:8]


def client(url, sk=secret, **kw):
    return boto3.client("s3", endpoint_url=url, aws_access_key_id=akid,
                        aws_secret_access_key=sk, region_name="us-east-1", **kw)


def ok(step):
    print("ok", step, flush=True)


s3 = client(http_url)
body = b"hello world"
r = s3.put_object(Bucket=bucket, Key="boto/a b+c.txt", Body=body)
assert r["ETag"] == '"5eb63bbbe01eeed093cb22bb8f5acdc3"', r["ETag"]
ok("put_object")

s3.put_object(Bucket=bucket, Key="boto/crc", Body=body, ChecksumAlgorithm="CRC32")
ok("put_object_crc32_header")

r = s3.get_object(Bucket=bucket, Key="boto/a b+c.txt", Range="bytes=0-4")
assert r["Body"].read() == b"hello" and r["ContentRange"] == "bytes 0-4/11", r
ok("get_object_range")

r = s3.list_objects(Bucket=bucket, Prefix="boto/")
assert [o["Key"] for o in r["Contents"]] == ["boto/a b+c.txt", "boto/crc"], r
r = s3.list_objects_v2(Bucket=bucket, Prefix="boto/", Delimiter="/", MaxKeys=1)
assert r["KeyCount"] == 1 and r["IsTruncated"], r
r2 = s3.list_objects_v2(Bucket=bucket, Prefix="boto/", Delimiter="/",
                        ContinuationToken=r["NextContinuationToken"])
assert [o["Key"] for o in r2["Contents"]] == ["boto/crc"], r2
ok("list_objects")

s3.copy_object(Bucket=bucket, Key="boto/copy", CopySource={"Bucket": bucket, "Key": "boto/a b+c.txt"})
assert s3.get_object(Bucket=bucket, Key="boto/copy")["Body"].read() == body
r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "boto/copy"}], "Quiet": False})
assert [d["Key"] for d in r["Deleted"]] == ["boto/copy"], r
ok("copy_delete_objects")

url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "boto/a b+c.txt"})
assert "AWSAccessKeyId=" in url and "Signature=" in url, url  # SigV2, boto3's default here
assert urllib.request.urlopen(url).read() == body
ok("presign_sigv2")

s3v4 = client(http_url, config=Config(signature_version="s3v4"))
url = s3v4.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "boto/a b+c.txt"},
                                  ExpiresIn=600)
assert "X-Amz-Signature=" in url, url
assert urllib.request.urlopen(url).read() == body
ok("presign_sigv4")

# over TLS a checksum goes in an aws-chunked trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER)
s3t = client(https_url, verify=ca)
big = bytes(range(256)) * 5000
for alg in ["CRC32", "CRC32C", "SHA1", "SHA256"]:
    s3t.put_object(Bucket=bucket, Key="boto/trailer-" + alg, Body=big, ChecksumAlgorithm=alg)
    got = s3t.get_object(Bucket=bucket, Key="boto/trailer-" + alg)["Body"].read()
    assert got == big, alg
    ok("trailer_" + alg)

# multipart through s3transfer (above its 8 MiB threshold)
path = os.path.join(work, "boto-9m.bin")
with open(path, "wb") as f:
    f.write(os.urandom(9 * 1024 * 1024 + 17))
s3.upload_file(path, bucket, "boto/multi.bin")
s3.download_file(bucket, "boto/multi.bin", path + ".back")
assert filecmp.cmp(path, path + ".back", shallow=False)
ok("multipart")

bad = client(http_url, sk="not-the-secret")
try:
    bad.put_object(Bucket=bucket, Key="boto/nope", Body=b"x")
    raise AssertionError("a wrong secret was accepted")
except ClientError as e:
    assert e.response["Error"]["Code"] == "SignatureDoesNotMatch", e.response
ok("wrong_secret")
