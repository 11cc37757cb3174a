// bench_tus.sh's parallel side (a benchmark helper, not a test): FILE to
// /uploads with tus-js-client 4.3.1 and parallelUploads: 4 (the
// concatenation extension: four partial uploads at once, each one PATCH,
// then the final, whose 201 comes once the document is ready).  Prints
// "SECONDS DOCUMENT-ID": the upload's own time, from start to success.
// usage: BINDERY_TEST_TOKEN=TOKEN node bench_tus_parallel.mjs URL FILE NAME
// (the token from the environment: a command line is visible to every user)
import { readFileSync } from 'node:fs';
import tus from 'tus-js-client';

const [base, file, name] = process.argv.slice(2);
const token = process.env.BINDERY_TEST_TOKEN;
const bytes = readFileSync(file);
const headers = { Authorization: `Bearer ${token}` };
const t0 = process.hrtime.bigint();
const up = new tus.Upload(bytes, {
	endpoint: `${base}/uploads`,
	headers,
	parallelUploads: 4,
	chunkSize: Infinity,
	metadata: { filename: name, filetype: 'application/octet-stream' },
	retryDelays: null,
	onSuccess: async () => {
		const secs = Number(process.hrtime.bigint() - t0) / 1e9;
		const res = await fetch(up.url, { method: 'HEAD', headers: { ...headers, 'Tus-Resumable': '1.0.0' } });
		const doc = (res.headers.get('location') || '').replace(/^.*\/documents\//, '');
		console.log(`${secs.toFixed(3)} ${doc}`);
	},
	onError: err => {
		console.error(`bench_tus_parallel: ${err.message}`);
		process.exit(1);
	},
});
up.start();
