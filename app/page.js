// page.js - the script of bindery's page (app/page.c renders the page and
// serves this file, compiled in, as GET /page.js; the page's CSP allows no
// other script).  Without it the page still lists, pages, filters,
// downloads and uploads through the plain form; with it:
// - several files at once, chosen or dropped, each with its own progress bar
//   and a status a screen reader announces;
// - direct uploads to storage when the server has them on (<body
//   data-direct="1">): POST /documents/direct, one PUT of the file to the
//   SAS URL with exactly the headers the server listed, then finalize;
// - otherwise files of data-tus-min bytes or more go through tus 1.0.0 at
//   /uploads in data-tus-chunk PATCHes, resumable: the upload's URL is kept
//   in localStorage under the app's mount and the file's name, size and
//   modification time, so choosing the same file after a reload (or a
//   crash) asks the server where it got to (HEAD) and goes on from there;
// - smaller files: one multipart POST /documents, as the form would send;
// - replace (PUT with If-Match, so a version someone else changed is not
//   overwritten) and delete (after a confirmation) on every row;
// - dates in the reader's own time zone.
// A write needs the bearer token typed into the page; it stays in this
// tab's sessionStorage only.
'use strict';

const $ = id => document.getElementById(id);
const settings = document.body.dataset;
// Where the server mounts the app ("" at the site's root, "/bindery" under a
// prefix): data-prefix, as the server saw SCRIPT_NAME.  Every URL of ours
// goes through here; the URLs the server answers with already carry it.
const appUrl = path => (settings.prefix || '') + path;
const tokenInput = $('token');

tokenInput.value = sessionStorage.getItem('bindery-token') || '';
tokenInput.addEventListener('input', () => sessionStorage.setItem('bindery-token', tokenInput.value));
const auth = () => (tokenInput.value ? { Authorization: 'Bearer ' + tokenInput.value } : {});

// ---- small helpers ----

function readableSize(n) {
	if (n < 1024)
		return n + ' B';
	const units = ['KiB', 'MiB', 'GiB', 'TiB'];
	let v = n / 1024, u = 0;
	while (v >= 1024 && u + 1 < units.length) {
		v /= 1024;
		u++;
	}
	return v.toFixed(1) + ' ' + units[u];
}

// The API's error message, or the status when the answer is not its JSON
// (a web server's own error page, a dropped connection).
function reason(r) {
	if (r.status === 0)
		return 'the connection failed';
	try {
		const j = JSON.parse(r.text);
		if (j && j.message)
			return j.message;
	} catch (e) { /* not JSON */ }
	return 'HTTP ' + r.status;
}

class Failure extends Error {
	constructor(r, what) {
		super((what ? what + ': ' : '') + reason(r));
		this.status = r.status;
	}
}

// One request through XMLHttpRequest (fetch reports no upload progress).
// Resolves with { status, text, header(name) } whatever the status; a
// network failure is status 0.
function send(method, url, headers, body, onProgress) {
	return new Promise(resolve => {
		const x = new XMLHttpRequest();
		x.open(method, url);
		for (const [k, v] of Object.entries(headers || {}))
			x.setRequestHeader(k, v);
		if (onProgress)
			x.upload.onprogress = p => onProgress(p.loaded);
		const done = () => resolve({ status: x.status, text: x.responseText,
			header: n => x.getResponseHeader(n) });
		x.onload = done;
		x.onerror = done;
		x.onabort = done;
		x.send(body === undefined ? null : body);
	});
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

// ---- one line per file: name, bar, status ----

function uploadItem(label) {
	const li = document.createElement('li');
	const name = document.createElement('span');
	const bar = document.createElement('progress');
	const status = document.createElement('span');
	name.textContent = label;
	bar.max = 100;
	bar.value = 0;
	bar.setAttribute('aria-label', 'Progress of ' + label);
	status.className = 'status';
	li.append(name, bar, status);
	$('uploads').append(li);
	return {
		li,
		progress(loaded, total, how) {
			bar.value = total ? (100 * loaded) / total : 100;
			status.className = 'status';
			status.textContent = `${how}: ${readableSize(loaded)} of ${readableSize(total)}`;
		},
		say(text, cls) {
			status.className = 'status ' + (cls || '');
			status.textContent = text;
			if (cls === 'done')
				bar.value = 100;
		},
	};
}

// ---- tus 1.0.0 ----

const b64 = s => btoa(String.fromCharCode(...new TextEncoder().encode(s)));
const tusKey = f => 'bindery-tus:' + JSON.stringify([appUrl('/'), f.name, f.size, f.lastModified]);
const tusHeaders = extra => Object.assign({ 'Tus-Resumable': '1.0.0' }, auth(), extra);

// Where a remembered upload stands: its offset, or null when it is gone
// (expired, finished and forgotten, another caller's).
async function tusOffset(url) {
	const r = await send('HEAD', url, tusHeaders());
	if (r.status !== 204 && r.status !== 200)
		return null;
	return { offset: Number(r.header('Upload-Offset')), location: r.header('Location') };
}

async function tusCreate(file, name) {
	const meta = 'filename ' + b64(name) + ',filetype ' + b64(file.type || 'application/octet-stream');
	const r = await send('POST', appUrl('/uploads'), tusHeaders({ 'Upload-Length': String(file.size),
		'Upload-Metadata': meta }));
	if (r.status !== 201 || !r.header('Location'))
		throw new Failure(r, 'the upload could not start');
	return r.header('Location');
}

// A PATCH the server still holds for an earlier request (409 upload_busy)
// is let go at once when that request's process died, but a live one that
// stalled keeps it for up to heartbeat + request_deadline (5.5 minutes by
// default): wait that long, and a little more, before giving up.
const TUS_BUSY_WAIT_MS = 6 * 60 * 1000;

// PATCH one chunk; returns the new offset.  A PATCH another request still
// holds (409 upload_busy) is retried after Retry-After for TUS_BUSY_WAIT_MS;
// a failed connection or a 5xx five times; an offset the server does not
// share (409 offset_mismatch) is asked for again.
async function tusPatch(url, file, offset, item) {
	const end = Math.min(offset + Number(settings.tusChunk), file.size);
	let waited = 0, failures = 0;
	for (;;) {
		const r = await send('PATCH', url, tusHeaders({ 'Upload-Offset': String(offset),
			'Content-Type': 'application/offset+octet-stream' }), file.slice(offset, end),
			loaded => item.progress(offset + loaded, file.size, 'Uploading (resumable)'));
		if (r.status === 204)
			return Number(r.header('Upload-Offset'));
		const busy = r.status === 409 && /upload_busy/.test(r.text);
		const failed = r.status === 0 || r.status >= 500;
		if ((busy && waited < TUS_BUSY_WAIT_MS) || (failed && ++failures <= 5)) {
			const ms = 1000 * Math.min(Number(r.header('Retry-After')) || 2, 30);
			item.say('Waiting for the server…');
			await sleep(ms);
			waited += ms;
			continue;
		}
		if (r.status === 409 && /offset_mismatch/.test(r.text)) {
			const at = await tusOffset(url);
			if (at)
				return at.offset;
		}
		throw new Failure(r, 'a chunk was refused');
	}
}

async function tusUpload(file, name, item) {
	const key = tusKey(file);
	let url = localStorage.getItem(key), offset = 0;
	if (url) {
		const at = await tusOffset(url);
		if (at && at.location && at.offset === file.size) {
			localStorage.removeItem(key);
			return true;
		}
		if (at) {
			offset = at.offset;
			item.say(`Resuming at ${readableSize(offset)} of ${readableSize(file.size)}`);
		} else {
			localStorage.removeItem(key);
			url = null;
		}
	}
	if (!url) {
		url = await tusCreate(file, name);
		localStorage.setItem(key, url);
	}
	// At least one PATCH: after a crash the server may hold every byte but
	// the last block unacknowledged, and only re-sending it finishes.
	do {
		offset = await tusPatch(url, file, offset, item);
		item.progress(offset, file.size, 'Uploading (resumable)');
	} while (offset < file.size);
	localStorage.removeItem(key);
	return true;
}

// ---- direct to storage, and the plain create ----

// Returns false when the server will not take this file directly (413:
// over the single-put limit; 404: no direct uploads here): tus takes it.
async function directUpload(file, name, item) {
	const type = file.type || 'application/octet-stream';
	const r = await send('POST', appUrl('/documents/direct'), Object.assign({ 'Content-Type': 'application/json' },
		auth()), JSON.stringify({ name, size: file.size, content_type: type }));
	if (r.status === 413 || r.status === 404)
		return false;
	if (r.status !== 201)
		throw new Failure(r, 'the direct upload could not start');
	const grant = JSON.parse(r.text);
	const put = await send('PUT', grant.upload_url, grant.headers, file,
		loaded => item.progress(loaded, file.size, 'Uploading to storage'));
	if (put.status !== 201)
		throw new Failure(put, 'storage refused the file');
	item.say('Checking the stored file…');
	const fin = await send('POST', grant.finalize_url, auth());
	if (fin.status !== 200)
		throw new Failure(fin, 'the upload could not be finished');
	return true;
}

async function formUpload(file, name, item) {
	const form = new FormData();
	form.append('name', name);
	form.append('file', file, file.name);
	const r = await send('POST', appUrl('/documents'), Object.assign({ Accept: 'application/json' }, auth()), form,
		loaded => item.progress(Math.min(loaded, file.size), file.size, 'Uploading'));
	if (r.status !== 201)
		throw new Failure(r);
}

// Which way a file goes: direct to storage when the server has it on and
// the file fits one Put Blob (data-direct-max); beyond that, or from
// data-tus-min bytes on when direct is off, tus; anything else (and an
// empty file, which tus and a Put Blob of nothing gain nothing from) one POST.
async function uploadOne(file, name) {
	const item = uploadItem(name);
	const direct = settings.direct === '1';
	try {
		let done = false;
		if (direct && file.size > 0 && file.size <= Number(settings.directMax))
			done = await directUpload(file, name, item);
		if (!done && file.size > 0 && (direct || file.size >= Number(settings.tusMin)))
			done = await tusUpload(file, name, item);
		if (!done)
			await formUpload(file, name, item);
		item.say('Done', 'done');
		return true;
	} catch (e) {
		item.say('Failed: ' + e.message, 'err');
		$('msg').textContent = e.message;
		return false;
	}
}

// One file after another: each gets the link to itself, and a slow link is
// not split between several.
async function uploadAll(files, oneName) {
	$('msg').textContent = '';
	let ok = 0;
	for (const f of files)
		ok += (await uploadOne(f, files.length === 1 && oneName ? oneName : f.name)) ? 1 : 0;
	if (ok)
		await refreshList();
	if (ok === files.length)
		$('msg').textContent = ok === 1 ? 'Uploaded 1 file.' : `Uploaded ${ok} files.`;
}

// ---- the list ----

function decorate(root) {
	for (const b of root.querySelectorAll('button.replace, button.delete'))
		b.hidden = false;
	for (const t of root.querySelectorAll('time[datetime]')) {
		const d = new Date(t.dateTime);
		if (!isNaN(d)) {
			t.title = t.dateTime;
			t.textContent = d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
		}
	}
}

// Fetch this same page again and swap its list in: the uploads' lines and
// the form keep their state.
async function refreshList() {
	const r = await fetch(location.href, { headers: { Accept: 'text/html' }, cache: 'no-store' });
	if (!r.ok)
		return;
	const fresh = new DOMParser().parseFromString(await r.text(), 'text/html').getElementById('list');
	if (fresh) {
		$('list').replaceWith(fresh);
		decorate(fresh);
	}
}

function replaceDoc(row) {
	const pick = document.createElement('input');
	pick.type = 'file';
	pick.addEventListener('change', async () => {
		const file = pick.files[0];
		if (!file)
			return;
		const name = row.querySelector('a.dl').textContent;
		const item = uploadItem(name + ' (replace)');
		const r = await send('PUT', appUrl(`/documents/${row.dataset.id}/content`), Object.assign({
			'If-Match': row.dataset.etag, 'Content-Type': file.type || 'application/octet-stream' },
			auth()), file, loaded => item.progress(loaded, file.size, 'Replacing'));
		if (r.status === 200) {
			item.say('Replaced', 'done');
			await refreshList();
		} else {
			const why = r.status === 412 ? 'it changed since this page was loaded; reload and try again'
				: reason(r);
			item.say('Failed: ' + why, 'err');
			$('msg').textContent = why;
		}
	});
	pick.click();
}

async function deleteDoc(row) {
	const name = row.querySelector('a.dl').textContent;
	if (!confirm(`Delete "${name}"? This cannot be undone.`))
		return;
	const r = await send('DELETE', appUrl('/documents/' + row.dataset.id), Object.assign({ 'If-Match': row.dataset.etag },
		auth()));
	if (r.status === 204) {
		$('msg').textContent = `Deleted ${name}.`;
		await refreshList();
	} else {
		$('msg').textContent = r.status === 412 ? `${name} changed since this page was loaded; reload`
			: reason(r);
	}
}

document.addEventListener('click', e => {
	const b = e.target.closest('button.replace, button.delete');
	const row = b && b.closest('tr[data-id]');
	if (!row)
		return;
	if (b.classList.contains('replace'))
		replaceDoc(row);
	else
		deleteDoc(row);
});

// ---- the upload form and the drop zone ----

const fileInput = $('file');
const drop = $('drop');
fileInput.multiple = true;
drop.hidden = false;
$('up').addEventListener('submit', e => {
	e.preventDefault();
	const files = [...fileInput.files];
	if (files.length)
		uploadAll(files, $('up').querySelector('input[name=name]').value).then(() => { fileInput.value = ''; });
});
drop.addEventListener('dragover', e => {
	e.preventDefault();
	drop.classList.add('over');
});
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', e => {
	e.preventDefault();
	drop.classList.remove('over');
	const files = [...e.dataTransfer.files];
	if (files.length)
		uploadAll(files, '');
});
decorate(document);
