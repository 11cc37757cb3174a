// The HTML page in a real browser (headless Chromium via playwright-core):
// the list shows what the API holds, the form uploads with the token and a
// progress bar, and Delete removes a row, all under the page's CSP (no inline
// script).  Then the stored-XSS proof: an uploaded HTML document that reads
// the page's token from sessionStorage and sends it off, clicked in the tab
// that holds the token, is downloaded and never runs (DESIGN.md "Serving user
// content").  Prints one line per check, "pass<TAB>what" or "fail<TAB>what";
// tests/e2e/browser.sh turns them into TAP with tests/lib/tap.sh.
// usage: node browser.mjs URL TOKEN FILE EVIL-HTML-FILE
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [url, token, file, evilFile] = process.argv.slice(2);
const ok = (cond, what) => console.log(`${cond ? 'pass' : 'fail'}\t${what.replace(/[\t\n]/g, ' ')}`);

const browser = await chromium.launch({
	executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
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
	ok(got.length > 0 && got === (await import('node:fs')).readFileSync(file, 'utf8'),
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

	// Stored XSS: a writer uploads HTML that steals the token of whoever clicks it.
	const evilName = `browser-xss-${process.pid}.html`;
	const up = await page.evaluate(async ([n, t, body]) => {
		const r = await fetch('/documents?name=' + encodeURIComponent(n), { method: 'POST', body,
			headers: { 'Authorization': 'Bearer ' + t, 'Content-Type': 'text/html' } });
		return r.status;
	}, [evilName, token, readFileSync(evilFile, 'utf8')]);
	ok(up === 201, `an HTML document is uploaded (${up})`);
	await page.reload();
	await page.fill('#token', token);	/* the page keeps it in sessionStorage */
	ok(await page.evaluate(() => sessionStorage.getItem('bindery-token')) === token,
	   'the victim tab holds the token in sessionStorage');
	const evilHref = await page.locator(`a:has-text("${evilName}")`).getAttribute('href');
	const stolen = [];
	page.context().on('request', r => { if (r.url().includes('stolen=')) stolen.push(r.url()); });
	const download = page.waitForEvent('download', { timeout: 10000 }).then(d => d, () => null);
	await page.click(`a:has-text("${evilName}")`);
	const d = await download;
	ok(d !== null && d.suggestedFilename() === evilName,
	   `clicking it downloads ${d ? d.suggestedFilename() : 'nothing'} instead of rendering it`);
	await page.waitForTimeout(1500);	/* time for a script that did run to phone home */
	ok(stolen.length === 0 && !page.url().includes('/content'),
	   `the uploaded script never runs: no token left the tab (${stolen.length} tries), the page stays (${page.url()})`);
	// Should a browser render it anyway, the sandbox CSP gives it an opaque
	// origin with no storage and nosniff keeps it from being taken for HTML it
	// is not labelled as: the browser must see both headers.
	await page.goto(url + '/');
	const framed = await page.evaluate(async href => {
		const r = await fetch(href);
		return [r.headers.get('content-security-policy'), r.headers.get('x-content-type-options')];
	}, evilHref);
	ok(framed[0] === "sandbox; default-src 'none'" && framed[1] === 'nosniff',
	   `the browser sees the sandbox CSP and nosniff on it (${framed.join(' | ')})`);
	const gone = await page.evaluate(async ([h, t]) =>
		(await fetch(h.replace(/\/content$/, ''), { method: 'DELETE', headers: { 'Authorization': 'Bearer ' + t } })).status,
		[evilHref, token]);
	ok(gone === 204, `the HTML document is deleted again (${gone})`);
} catch (e) {
	ok(false, `browser step failed: ${e.message.split('\n')[0]}`);
} finally {
	await browser.close();
}
process.exit(0);
