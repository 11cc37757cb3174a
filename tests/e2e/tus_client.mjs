// tus-js-client 4.3.1, the reference tus client, from Node against bindery's
// /uploads.  One case per run; tests/e2e/tus_client.sh
// runs each case through lighttpd and through Apache, then checks the
// document's bytes and runs `bindery audit`.
//
//   whole   FILE in 4 MiB chunks from an fs.ReadStream: success, and the
//           last PATCH names the document (Location: /documents/ID).
//   resume  FILE as a Buffer; abort() once two chunks are acknowledged; a
//           NEW Upload given the stored upload URL (uploadUrl) finishes it,
//           and its first PATCH starts past 0, at most where the first
//           client was acknowledged.
//   kill    FILE from an fs.ReadStream; once two chunks are acknowledged,
//           Azurite (its PID) is stopped with SIGSTOP so the next PATCH
//           stays inside bindery, holding the upload, while its Put Block
//           waits on storage.  As soon as that Put Block sits unread in
//           Azurite's socket, every bindery.fcgi process under the web
//           server's PID gets SIGKILL, and Azurite SIGCONT.  retryDelays
//           span the takeover time (heartbeat + request_deadline of the
//           test config), though the killed PATCH lets go as soon as its
//           database session is gone, and the same Upload object finishes
//           within that time.
//
//   parallel  FILE as a Buffer with parallelUploads: 4 (the concatenation
//           extension): four partial uploads, each its own POST and
//           PATCHes at once, then the final's POST, whose 201 comes once
//           the document is ready; a HEAD of the final names the document.
//
//   taken   FILE to NAME, a name a ready document already has, with the
//           retryDelays and onShouldRetry of doc/api.md's tus-js-client
//           snippet: the creation is refused with 422 name_taken and the
//           client gives up at once, within 5 s and after one POST (a 409
//           would be retried for the sum of those delays, about nine
//           minutes: the case stops waiting after 15 s).
//
// Prints one line per check, "pass<TAB>what" or "fail<TAB>what", "note<TAB>
// text", and "location<TAB>/documents/ID" for the shell test to fetch.
// usage: BINDERY_TEST_TOKEN=TOKEN node tus_client.mjs CASE URL FILE NAME \
//            [SERVER-PID AZURITE-PID AZURITE-PORT TAKEOVER-S]
// (the token from the environment: a command line is visible to every user)
import { createReadStream, readFileSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import tus from 'tus-js-client';

const [kase, base, file, name, serverPid, azuritePid, azuritePort, takeoverS] = process.argv.slice(2);
const token = process.env.BINDERY_TEST_TOKEN;
const say = (kind, what) => console.log(`${kind}\t${String(what).replace(/[\t\n]/g, ' ')}`);
const ok = (cond, what) => say(cond ? 'pass' : 'fail', what);
const CHUNK = 4 * 1024 * 1024;
const size = statSync(file).size;
const endpoint = `${base}/uploads`;
const sleep = ms => new Promise(r => setTimeout(r, ms));

// The options every case shares: the bearer token, 4 MiB chunks, the
// document's name and type, and a Location seen on any answer kept.
function options(extra, seen) {
	return {
		endpoint,
		headers: { Authorization: `Bearer ${token}` },
		chunkSize: CHUNK,
		metadata: { filename: name, filetype: 'application/octet-stream' },
		retryDelays: [0, 1000, 3000, 5000],
		onAfterResponse: (req, res) => {
			const loc = res.getHeader('Location');
			if (req.getMethod() === 'PATCH' && loc)
				seen.location = loc;
			seen.statuses.push(`${req.getMethod()} ${res.getStatus()}`);
		},
		...extra,
	};
}

// run(upload, seen): start it; resolve with 'success' or the error.
function run(upload, seen) {
	return new Promise(resolve => {
		upload.options.onSuccess = payload => {
			const loc = payload.lastResponse.getHeader('Location');
			if (loc)
				seen.location = loc;
			resolve('success');
		};
		upload.options.onError = err => resolve(err);
		upload.start();
	});
}

function report(result, seen, what) {
	ok(result === 'success', `${what}: tus-js-client reports success (${result})`);
	ok(/^\/documents\/[0-9]+$/.test(seen.location || ''),
		`${what}: the last PATCH names the document (Location: ${seen.location})`);
	if (seen.location)
		say('location', seen.location);
}

async function caseWhole() {
	const seen = { statuses: [] };
	let chunks = 0;
	const up = new tus.Upload(createReadStream(file), options({
		onChunkComplete: () => { chunks++; },
	}, seen));
	const result = await run(up, seen);
	report(result, seen, 'whole');
	ok(chunks === Math.ceil(size / CHUNK), `whole: ${chunks} chunks acknowledged for ${size} bytes`);
	ok(/^\/uploads\/[0-9a-f]{32}$/.test(up.url ? new URL(up.url).pathname : ''),
		`whole: the upload URL is /uploads/{32 hex} (${up.url})`);
}

async function caseResume() {
	const bytes = readFileSync(file);
	const first = { statuses: [] };
	let acked = 0;
	let up;
	const aborted = new Promise(resolve => {
		up = new tus.Upload(bytes, options({
			onChunkComplete: (_n, accepted) => {
				acked = accepted;
				if (accepted >= 2 * CHUNK)
					up.abort().then(() => resolve('aborted'), e => resolve(e));
			},
			onSuccess: () => resolve('finished before the abort'),
			onError: e => resolve(e),
		}, first));
		up.start();
	});
	const how = await aborted;
	ok(how === 'aborted' && acked >= 2 * CHUNK && acked < size,
		`resume: the first client aborted after ${acked} bytes acknowledged (${how})`);
	const url = up.url;
	if (!url) {
		say('fail', 'resume: the first client has an upload URL to resume from');
		return;
	}
	// A new client that knows only the stored URL.
	const seen = { statuses: [] };
	let firstPatch = null;
	let firstProgress = null;
	const again = new tus.Upload(bytes, options({
		uploadUrl: url,
		onBeforeRequest: req => {
			if (req.getMethod() === 'PATCH' && firstPatch === null)
				firstPatch = Number(req.getHeader('Upload-Offset'));
		},
		onProgress: sent => {
			if (firstProgress === null)
				firstProgress = sent;
		},
	}, seen));
	const result = await run(again, seen);
	report(result, seen, 'resume');
	ok(again.url === url, `resume: the new client used the stored URL (${again.url})`);
	ok(firstPatch > 0 && firstPatch <= acked,
		`resume: its first PATCH starts at ${firstPatch}, past 0 and at most the ${acked} acknowledged`);
	ok(firstProgress > 0, `resume: its first progress report is ${firstProgress}, not 0`);
	ok(!seen.statuses.includes('POST 201'), 'resume: the new client created no second upload');
}

// The PIDs of every bindery.fcgi process below root (its children under
// lighttpd; under Apache, mod_fcgid's process manager's children; the
// pool's workers under its master).
function responders(root) {
	const parent = new Map();
	for (const d of readdirSync('/proc')) {
		if (!/^[0-9]+$/.test(d))
			continue;
		try {
			const stat = readFileSync(`/proc/${d}/stat`, 'latin1');
			parent.set(d, stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
		} catch { /* gone meanwhile */ }
	}
	const below = new Set([String(root)]);
	let grew = true;
	while (grew) {
		grew = false;
		for (const [pid, ppid] of parent)
			if (below.has(ppid) && !below.has(pid)) {
				below.add(pid);
				grew = true;
			}
	}
	below.delete(String(root));
	return [...below].filter(pid => {
		try { return readlinkSync(`/proc/${pid}/exe`).endsWith('/bindery.fcgi'); } catch { return false; }
	});
}

// Bytes a client sent to the (stopped) Azurite that it has not read yet:
// the receive queues of the established sockets on its port.
function azuriteUnread() {
	const port = Number(azuritePort).toString(16).toUpperCase().padStart(4, '0');
	let unread = 0;
	for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
		let text = '';
		try { text = readFileSync(table, 'latin1'); } catch { continue; }
		for (const line of text.split('\n').slice(1)) {
			const f = line.trim().split(/\s+/);
			if (f.length < 5 || !f[1].endsWith(`:${port}`) || f[3] !== '01')
				continue;
			unread += parseInt(f[4].split(':')[1], 16);
		}
	}
	return unread;
}

async function caseKill() {
	const seen = { statuses: [] };
	const kill = { stopped: false, done: false, killed: [], unread: 0, at: 0 };
	const retries = [];
	// Past the takeover time with room: 1+2+3+5+5 s, then 10 s steps.
	const delays = [1000, 2000, 3000, 5000, 5000];
	while (delays.reduce((a, b) => a + b, 0) < (Number(takeoverS) + 40) * 1000)
		delays.push(10000);
	const up = new tus.Upload(createReadStream(file), options({
		retryDelays: delays,
		onChunkComplete: (_n, accepted) => {
			if (!kill.stopped && accepted >= 2 * CHUNK) {
				process.kill(Number(azuritePid), 'SIGSTOP');
				kill.stopped = true;
			}
		},
		onShouldRetry: (err, attempt) => {
			const status = err.originalResponse ? err.originalResponse.getStatus() : 0;
			retries.push(status);
			return status < 400 || status >= 500 || status === 409 || status === 423;
		},
	}, seen));
	let settled = false;
	const finished = run(up, seen).then(r => { settled = true; return r; });
	// Wait for the PATCH after the second chunk to reach storage, then kill.
	try {
		while (!kill.stopped && !settled)
			await sleep(20);
		const t0 = Date.now();
		while (!settled && (kill.unread = azuriteUnread()) === 0 && Date.now() - t0 < 30000)
			await sleep(50);
		kill.at = Date.now();
		for (const pid of settled ? [] : responders(serverPid)) {
			try {
				process.kill(Number(pid), 'SIGKILL');
				kill.killed.push(pid);
			} catch { /* exited meanwhile */ }
		}
	} finally {
		if (kill.stopped)
			process.kill(Number(azuritePid), 'SIGCONT');
	}
	ok(kill.unread > 0, `kill: a PATCH reached storage (${kill.unread} bytes waiting in Azurite) before the kill`);
	ok(kill.killed.length > 0, `kill: SIGKILL to the responders ${kill.killed.join(' ')}`);
	const result = await finished;
	report(result, seen, 'kill');
	ok(retries.length > 0 && (retries[0] === 0 || retries[0] >= 500),
		`kill: the killed PATCH failed with no answer or a 5xx (retried on: ${retries.join(' ')})`);
	const took = (Date.now() - kill.at) / 1000;
	say('note', `kill: took ${took.toFixed(1)} s after the kill; statuses ${seen.statuses.join(', ')}`);
	// The killed PATCH's database session died with it, so the retry takes
	// the upload over at once (sql/014), not after the takeover window that
	// a live but silent holder gets; the window is the bound, with margin.
	ok(took < Number(takeoverS),
		`kill: the killed PATCH let go at once: finished ${took.toFixed(1)} s after the kill, ` +
		`within the ${takeoverS} s a silent live holder keeps it`);
}

// The tus-js-client snippet of doc/api.md: its retryDelays and its
// onShouldRetry, as a reader would copy them; null when it has not both.
function docRetry() {
	let text;
	try {
		text = readFileSync(new URL('../../doc/api.md', import.meta.url), 'utf8');
	} catch {
		return null;
	}
	const delays = /retryDelays: (\[[0-9, ]*\])/.exec(text);
	const retry = /onShouldRetry: (\(err\) => \{[\s\S]*?\n {6}\}),/.exec(text);
	if (!delays || !retry)
		return null;
	return { retryDelays: JSON.parse(delays[1]), onShouldRetry: new Function(`return ${retry[1]};`)() };
}

async function caseTaken() {
	const doc = docRetry();
	ok(doc !== null, 'taken: doc/api.md\'s tus-js-client snippet has retryDelays and onShouldRetry');
	if (!doc)
		return;
	const patience = doc.retryDelays.reduce((a, b) => a + b, 0) / 1000;
	const seen = { statuses: [] };
	const up = new tus.Upload(readFileSync(file), options({ ...doc }, seen));
	const t0 = Date.now();
	let timer;
	const stuck = new Promise(resolve => { timer = setTimeout(() => resolve('still retrying'), 15000); });
	const result = await Promise.race([run(up, seen), stuck]);
	clearTimeout(timer);
	const took = (Date.now() - t0) / 1000;
	if (result === 'still retrying')
		await up.abort().catch(() => {});
	const res = result && result.originalResponse;
	const status = res ? res.getStatus() : 0;
	let code = '';
	try { code = JSON.parse(res.getBody()).error; } catch { /* no JSON */ }
	ok(status === 422 && code === 'name_taken',
		`taken: the client's error is the server's 422 name_taken (${status} ${code}; ${result})`);
	ok(took < 5, `taken: tus-js-client gave up ${took.toFixed(1)} s after it started, within 5 s ` +
		`(retrying, these retryDelays would keep it ${patience} s)`);
	const posts = seen.statuses.filter(st => st.startsWith('POST '));
	ok(posts.length === 1, `taken: one POST, not retried (${seen.statuses.join(', ')})`);
}

async function caseParallel() {
	const seen = { statuses: [] };
	const up = new tus.Upload(readFileSync(file), options({ parallelUploads: 4, chunkSize: Infinity }, seen));
	const result = await run(up, seen);
	ok(result === 'success', `parallel: tus-js-client reports success (${result})`);
	const posts = seen.statuses.filter(s => s.startsWith('POST '));
	ok(posts.length === 5 && posts.every(s => s === 'POST 201'),
		`parallel: four partials and the final, each created 201 (${posts.join(', ')})`);
	ok(/^\/uploads\/[0-9a-f]{32}$/.test(up.url ? new URL(up.url).pathname : ''),
		`parallel: the final's URL is /uploads/{32 hex} (${up.url})`);
	if (!up.url)
		return;
	const res = await fetch(up.url, { method: 'HEAD',
		headers: { Authorization: `Bearer ${token}`, 'Tus-Resumable': '1.0.0' } });
	const concat = res.headers.get('upload-concat') || '';
	ok(/^final;(\S+ ){3}\S+$/.test(concat), `parallel: HEAD of the final names four partials (${concat})`);
	ok(res.headers.get('upload-offset') === String(size), `parallel: ... and its whole length as offset`);
	const loc = res.headers.get('location') || '';
	ok(/^\/documents\/[0-9]+$/.test(loc), `parallel: ... and the document (Location: ${loc})`);
	if (loc)
		say('location', loc);
}

const cases = { whole: caseWhole, resume: caseResume, kill: caseKill, taken: caseTaken, parallel: caseParallel };
if (!cases[kase]) {
	say('fail', `unknown case ${kase}`);
	process.exit(2);
}
await cases[kase]();
