// The HTML page in a real browser (headless Chromium via playwright-core):
// the list shows what the API holds, the form uploads with the token and a
// progress bar, and Delete removes a row.  Prints one line per check,
// "pass<TAB>what" or "fail<TAB>what"; tests/e2e/browser.sh turns them into TAP
// with tests/lib/tap.sh.
// usage: node browser.mjs URL TOKEN FILE
import { chromium } from 'playwright-core';

const [url, token, file] = process.argv.slice(2);
const ok = (cond, what) => console.log(`${cond ? 'pass' : 'fail'}\t${what.replace(/[\t\n]/g, ' ')}`);

const browser = await chromium.launch({
	executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
	args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
		'--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
	const page = await browser.newPage();
	const name = `browser-${process.pid}.txt`;
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
} catch (e) {
	ok(false, `browser step failed: ${e.message.split('\n')[0]}`);
} finally {
	await browser.close();
}
process.exit(0);
