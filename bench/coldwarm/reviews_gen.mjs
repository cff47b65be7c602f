// SPDX-License-Identifier: Apache-2.0
//
// reviews_gen.mjs: writes an Amazon-reviews-shaped dataset with DuckDB, the
// table of ClickHouse's distributed-cache post: review_date (Date, 1995 to
// 2015, in no order), marketplace, customer_id, review_id, product_id,
// product_parent, product_title, product_category (a few dozen values),
// star_rating, helpful_votes, total_votes, vine, verified_purchase,
// review_headline and review_body (a few hundred bytes of words), ROWS rows
// in FILES zstd Parquet files:
//
//   node reviews_gen.mjs DIR ROWS [FILES]  -> DIR/reviews_*.parquet
//
// Exits 77 (printing why) when the npm package is missing.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadDuckDB } from '../duckdb.mjs';

const duck = await loadDuckDB();
const [dir, rowsArg, filesArg] = process.argv.slice(2);
const rows = Number(rowsArg || 1000000), files = Number(filesArg || 4);
mkdirSync(dir, { recursive: true });
const inst = await duck.DuckDBInstance.create(':memory:', {
  extension_directory: join(dir, 'duckdb_extensions'), threads: '2' });
const con = await inst.connect();
const words = "['great','product','works','as','expected','the','battery','broke','after','a','week',"
  + "'love','it','would','buy','again','not','worth','price','fast','shipping','quality','poor',"
  + "'excellent','my','kids','use','every','day','size','fits','perfectly','returned','cheap']";
const cats = "['Books','Electronics','Toys','Home','Kitchen','Music','Video','Apparel','Shoes','Sports',"
  + "'Beauty','Grocery','Garden','Tools','Automotive','Baby','Office','Pet','Jewelry','Watches',"
  + "'Luggage','Software','Camera','Wireless','PC','Furniture','Outdoors','Health','Video Games','Digital']";
const per = Math.ceil(rows / files);
const t0 = Date.now();
for (let f = 0; f < files; f++) {
  const lo = f * per, hi = Math.min(rows, lo + per);
  if (lo >= hi) break;
  await con.run(`COPY (SELECT
    (DATE '1995-06-24' + (hash(i) % 7500)::INTEGER) AS review_date,
    (ARRAY['US','UK','DE','FR','JP'])[1 + (hash(i * 3) % 5)::BIGINT] AS marketplace,
    (hash(i * 5) % 50000000)::UBIGINT AS customer_id,
    'R' || upper(substr(md5(i::VARCHAR), 1, 13)) AS review_id,
    'B' || lpad(((hash(i * 7) % 2000000))::VARCHAR, 9, '0') AS product_id,
    (hash(i * 7) % 2000000 * 37 % 999999937)::UBIGINT AS product_parent,
    'Product ' || ((hash(i * 7) % 2000000))::VARCHAR || ' ' || (${words})[1 + (hash(i * 11) % 34)::BIGINT]
      || ' ' || (${words})[1 + (hash(i * 13) % 34)::BIGINT] AS product_title,
    (${cats})[1 + (hash(i * 7) % 30)::BIGINT] AS product_category,
    (1 + hash(i * 17) % 5)::UTINYINT AS star_rating,
    (CASE WHEN hash(i * 19) % 10 < 7 THEN 0 ELSE hash(i * 23) % 200 END)::UINTEGER AS helpful_votes,
    (CASE WHEN hash(i * 19) % 10 < 7 THEN 0 ELSE hash(i * 23) % 200 + hash(i * 29) % 50 END)::UINTEGER AS total_votes,
    (hash(i * 31) % 100 < 2) AS vine,
    (hash(i * 37) % 100 < 80) AS verified_purchase,
    (${words})[1 + (hash(i * 41) % 34)::BIGINT] || ' ' || (${words})[1 + (hash(i * 43) % 34)::BIGINT]
      || ' ' || (${words})[1 + (hash(i * 47) % 34)::BIGINT] AS review_headline,
    array_to_string(list_transform(range((8 + hash(i * 53) % 56)::BIGINT),
      k -> (${words})[1 + (hash(i * 59 + k) % 34)::BIGINT]), ' ') || ' ' || md5((i * 61)::VARCHAR) AS review_body
    FROM range(${lo}, ${hi}) t(i))
    TO '${dir}/reviews_${f}.parquet' (FORMAT parquet, COMPRESSION zstd)`);
}
console.error(`reviews_gen: ${rows} rows in ${files} files, ${((Date.now() - t0) / 1000).toFixed(1)} s`);
