// page.js - the script of bindery's page (app/page.c renders the page and
// serves this file, compiled in, as GET /page.js; the page's CSP allows no
// other script).  Without it the page still lists, pages, filters,
// downloads and uploads through the plain form; with it:
// - several files at once, chosen or dropped, each with its own progress bar,
//   a status a screen reader announces and a Cancel button; each batch has
//   its own summary line, so two batches never write over each other;
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
//   overwritten) and delete (after a confirmation) on every row, shown once
//   a token is typed or the server knows the caller (<body data-auth="1">),
//   each with its progress and errors in its own row;
// - after an upload, the list's first page again, the new rows highlighted;
// - dates in the reader's own time zone; failures in plain words.
// A write needs the bearer token typed into the page (it stays in this
// tab's sessionStorage only) or the web server's authentication.
'use strict';

const $ = id => document.getElementById(id);
const settings = document.body.dataset;
// Where the server mounts the app ("" at the site's root, "/bindery" under a
// prefix): data-prefix, as the server saw SCRIPT_NAME.  Every URL of ours
// goes through here; the URLs the server answers with already carry it.
const appUrl = path => (settings.prefix || '') + path;
const tokenInput = $('token');

tokenInput.value = sessionStorage.getItem('bindery-token') || '';
const auth = () => (tokenInput.value ? { Authorization: 'Bearer ' + tokenInput.value } : {});
// Replace and Delete could do nothing without a caller: they show once a
// token is typed, or when the server already knows who this is.
const canWrite = () => settings.auth === '1' || tokenInput.value !== '';
tokenInput.addEventListener('input', () => {
	sessionStorage.setItem('bindery-token', tokenInput.value);
	for (const b of document.querySelectorAll('button.replace, button.delete'))
		b.hidden = !canWrite();
});

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

// What a person reads when something fails: the API's error code (doc/api.md)
// in plain words, never how the file travels.
const PLAIN = {
	unauthorized: 'The token is missing or not valid. Type your token and try again.',
	forbidden: 'You may not change this document.',
	name_taken: 'A document with this name already exists. Choose another name.',
	too_large: 'The file is larger than this server accepts.',
	bad_name: 'That name cannot be used. Choose another name.',
	not_found: 'It is no longer there. Reload the page.',
	precondition_failed: 'Someone changed it since this page was loaded. Reload and try again.',
	upload_gone: 'The upload took too long and was given up. Try again.',
	checksum_mismatch: 'The file was damaged on the way. Try again.',
	sha256_mismatch: 'The file was damaged on the way. Try again.',
	size_mismatch: 'The file was damaged on the way. Try again.',
	body_timeout: 'The upload came in too slowly and was stopped. Try again.',
	unavailable: 'The service is not available just now. Try again in a minute.',
};

function reason(r, fallback) {
	if (r.status === 0)
		return 'The connection was lost. Check your network and try again.';
	let code;
	try {
		code = JSON.parse(r.text).error;
	} catch (e) { /* not JSON: a web server's page, or storage's XML */ }
	if (code && PLAIN[code])
		return PLAIN[code];
	if (r.status === 413)
		return PLAIN.too_large;
	if (r.status === 401)
		return PLAIN.unauthorized;
	if (fallback)
		return fallback;
	if (r.status >= 500)
		return 'The server had a problem. Try again in a minute.';
	return `Something went wrong (error ${r.status}). Try again.`;
}

class Failure extends Error {
	constructor(r, fallback) {
		super(reason(r, fallback));
		this.status = r.status;
	}
}

// The person pressed Cancel: whatever was in flight was aborted.
class Cancelled extends Error {}

// One request through XMLHttpRequest (fetch reports no upload progress).
// Resolves with { status, text, header(name) } whatever the status; a
// network failure is status 0.  With an upload's item, Cancel aborts it
// and the promise rejects with Cancelled.
function send(method, url, headers, body, onProgress, item) {
	return new Promise((resolve, reject) => {
		if (item && item.cancelled)
			return reject(new Cancelled());
		const x = new XMLHttpRequest();
		x.open(method, url);
		for (const [k, v] of Object.entries(headers || {}))
			x.setRequestHeader(k, v);
		if (onProgress)
			x.upload.onprogress = p => onProgress(p.loaded);
		const done = () => {
			if (item)
				item.xhr = null;
			if (item && item.cancelled)
				reject(new Cancelled());
			else
				resolve({ status: x.status, text: x.responseText, header: n => x.getResponseHeader(n) });
		};
		x.onload = done;
		x.onerror = done;
		x.onabort = done;
		if (item)
			item.xhr = x;
		x.send(body === undefined ? null : body);
	});
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

// The document id in a Location (".../documents/ID"), or null.
const idOf = loc => ((/\/documents\/(\d+)$/.exec(loc || '') || [])[1] || null);

// ---- one line per file: name, bar, status ----

function uploadItem(label, batch) {
	const li = document.createElement('li');
	const name = document.createElement('span');
	const bar = document.createElement('progress');
	const status = document.createElement('span');
	const cancel = document.createElement('button');
	name.textContent = label;
	bar.max = 100;
	bar.value = 0;
	bar.setAttribute('aria-label', 'Progress of ' + label);
	status.className = 'status';
	cancel.type = 'button';
	cancel.className = 'cancel';
	cancel.textContent = 'Cancel';
	cancel.setAttribute('aria-label', 'Cancel ' + label);
	li.append(name, bar, status, cancel);
	batch.last.after(li);
	batch.last = li;	/* the next file's line goes after this one */
	const item = {
		li,
		cancelled: false,
		xhr: null,
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
		finished() {
			cancel.hidden = true;
		},
	};
	cancel.addEventListener('click', () => {
		item.cancelled = true;
		cancel.disabled = true;
		item.say('Cancelling…');
		if (item.xhr)
			item.xhr.abort();
	});
	return item;
}

// A batch (one choice or one drop of files): its own line above its files,
// which says how it went once every file has finished.
function uploadBatch(count) {
	const li = document.createElement('li');
	li.className = 'batch';
	li.setAttribute('role', 'status');
	li.textContent = count === 1 ? 'Uploading 1 file…' : `Uploading ${count} files…`;
	$('uploads').append(li);
	return { li, last: li };
}

// ---- tus 1.0.0 ----

const b64 = s => btoa(String.fromCharCode(...new TextEncoder().encode(s)));
const tusKey = f => 'bindery-tus:' + JSON.stringify([appUrl('/'), f.name, f.size, f.lastModified]);
const tusHeaders = extra => Object.assign({ 'Tus-Resumable': '1.0.0' }, auth(), extra);

// Where a remembered upload stands: its offset, or null when it is gone
// (expired, finished and forgotten, another caller's).
async function tusOffset(url, item) {
	const r = await send('HEAD', url, tusHeaders(), undefined, null, item);
	if (r.status !== 204 && r.status !== 200)
		return null;
	return { offset: Number(r.header('Upload-Offset')), location: r.header('Location') };
}

async function tusCreate(file, name, item) {
	const meta = 'filename ' + b64(name) + ',filetype ' + b64(file.type || 'application/octet-stream');
	const r = await send('POST', appUrl('/uploads'), tusHeaders({ 'Upload-Length': String(file.size),
		'Upload-Metadata': meta }), undefined, null, item);
	if (r.status !== 201 || !r.header('Location'))
		throw new Failure(r, 'The upload could not start. Try again.');
	return r.header('Location');
}

// Cancel: tus termination (the server lists it in Tus-Extension), so the
// stored part goes now rather than when the upload expires.  A PATCH just
// aborted may hold the upload a moment longer (409 upload_busy): wait as
// told, a few times.  Whatever still fails, the upload expires.
async function tusTerminate(url) {
	for (let i = 0; i < 8; i++) {
		const r = await send('DELETE', url, tusHeaders());
		if (r.status === 204 || r.status === 404 || r.status === 410)
			return;
		if (r.status !== 409 && r.status !== 0 && r.status < 500)
			return;
		await sleep(1000 * Math.min(Number(r.header('Retry-After')) || 1, 3));
	}
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
			loaded => item.progress(offset + loaded, file.size, 'Uploading (resumable)'), item);
		if (r.status === 204) {
			item.docId = idOf(r.header('Location'));
			return Number(r.header('Upload-Offset'));
		}
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
			const at = await tusOffset(url, item);
			if (at)
				return at.offset;
		}
		throw new Failure(r);
	}
}

async function tusUpload(file, name, item) {
	const key = tusKey(file);
	let url = localStorage.getItem(key), offset = 0;
	if (url) {
		const at = await tusOffset(url, item);
		if (at && at.location && at.offset === file.size) {
			localStorage.removeItem(key);
			item.docId = idOf(at.location);
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
		url = await tusCreate(file, name, item);
		localStorage.setItem(key, url);
	}
	// At least one PATCH: after a crash the server may hold every byte but
	// the last block unacknowledged, and only re-sending it finishes.
	try {
		do {
			offset = await tusPatch(url, file, offset, item);
			item.progress(offset, file.size, 'Uploading (resumable)');
		} while (offset < file.size);
	} catch (e) {
		if (e instanceof Cancelled) {
			localStorage.removeItem(key);
			await tusTerminate(url);
		}
		throw e;
	}
	localStorage.removeItem(key);
	return true;
}

// ---- direct to storage, and the plain create ----

// Returns false when the server will not take this file directly (413:
// over the single-put limit; 404: no direct uploads here): tus takes it.
// Cancelled at any step, what is left is an intent nobody finalizes, which
// the sweeper resolves when it expires.
async function directUpload(file, name, item) {
	const type = file.type || 'application/octet-stream';
	const r = await send('POST', appUrl('/documents/direct'), Object.assign({ 'Content-Type': 'application/json' },
		auth()), JSON.stringify({ name, size: file.size, content_type: type }), null, item);
	if (r.status === 413 || r.status === 404)
		return false;
	if (r.status !== 201)
		throw new Failure(r, 'The upload could not start. Try again.');
	const grant = JSON.parse(r.text);
	const put = await send('PUT', grant.upload_url, grant.headers, file,
		loaded => item.progress(loaded, file.size, 'Uploading'), item);
	if (put.status !== 201)
		throw new Failure(put, 'The file could not be saved. Try again.');
	item.say('Checking the stored file…');
	const fin = await send('POST', grant.finalize_url, auth(), undefined, null, item);
	if (fin.status !== 200)
		throw new Failure(fin, 'The file could not be checked after saving. Try again.');
	item.docId = JSON.parse(fin.text).id;
	return true;
}

async function formUpload(file, name, item) {
	const form = new FormData();
	form.append('name', name);
	form.append('file', file, file.name);
	const r = await send('POST', appUrl('/documents'), Object.assign({ Accept: 'application/json' }, auth()), form,
		loaded => item.progress(Math.min(loaded, file.size), file.size, 'Uploading'), item);
	if (r.status !== 201)
		throw new Failure(r);
	item.docId = JSON.parse(r.text).id;
}

// Which way a file goes: direct to storage when the server has it on and
// the file fits one Put Blob (data-direct-max); beyond that, or from
// data-tus-min bytes on when direct is off, tus; anything else (and an
// empty file, which tus and a Put Blob of nothing gain nothing from) one POST.
async function uploadOne(file, name, batch) {
	const item = uploadItem(name, batch);
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
		return { ok: true, id: item.docId, name };
	} catch (e) {
		if (e instanceof Cancelled) {
			item.say('Cancelled', 'muted');
			return { cancelled: true };
		}
		item.say('Failed: ' + e.message, 'err');
		return {};
	} finally {
		item.finished();
	}
}

// The documents this tab just uploaded, highlighted in the list until the
// page is left: by id, and by name when the id did not come back.
const justUploaded = { ids: new Set(), names: new Set() };

// One file after another: each gets the link to itself, and a slow link is
// not split between several.  The batch's own line says how it went.
async function uploadAll(files, oneName) {
	const batch = uploadBatch(files.length);
	let ok = 0, cancelled = 0;
	for (const f of files) {
		const r = await uploadOne(f, files.length === 1 && oneName ? oneName : f.name, batch);
		if (r.ok) {
			ok++;
			if (r.id)
				justUploaded.ids.add(String(r.id));
			else
				justUploaded.names.add(r.name);
		}
		cancelled += r.cancelled ? 1 : 0;
	}
	const failed = files.length - ok - cancelled;
	const parts = [files.length === 1 ? (ok ? 'Uploaded.' : '') : `${ok} of ${files.length} files uploaded.`];
	if (failed)
		parts.push(failed === 1 ? '1 failed.' : `${failed} failed.`);
	if (cancelled)
		parts.push(`${cancelled} cancelled.`);
	batch.li.textContent = parts.filter(Boolean).join(' ');
	batch.li.classList.add(failed ? 'err' : 'done');
	if (ok)
		await refreshList(true);
}

// ---- the list ----

// What a row says about its own Replace or Delete (progress, done, why it
// failed), by document id: it stays in the row, also after the list is
// fetched again, so nobody has to look for it at the top of the page.
const rowNotes = new Map();

function rowSay(row, text, cls) {
	rowNotes.set(row.dataset.id, { text, cls });
	showRowNote(row);
}

function showRowNote(row) {
	const note = rowNotes.get(row.dataset.id);
	let span = row.querySelector('.rowerr');
	if (!note) {
		if (span)
			span.remove();
		return;
	}
	if (!span) {
		span = document.createElement('span');
		row.lastElementChild.append(span);
	}
	span.className = 'rowerr ' + (note.cls || '');
	span.setAttribute('role', note.cls === 'err' ? 'alert' : 'status');
	span.textContent = note.text;
}

function decorate(root) {
	for (const b of root.querySelectorAll('button.replace, button.delete'))
		b.hidden = !canWrite();
	for (const t of root.querySelectorAll('time[datetime]')) {
		const d = new Date(t.dateTime);
		if (!isNaN(d)) {
			t.title = t.dateTime;
			t.textContent = d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
		}
	}
	for (const row of root.querySelectorAll('tr[data-id]')) {
		const link = row.querySelector('a.dl');
		if ((justUploaded.ids.has(row.dataset.id) || justUploaded.names.has(link.textContent)) &&
		    !row.classList.contains('new')) {
			row.classList.add('new');
			const badge = document.createElement('span');
			badge.className = 'badge';
			badge.textContent = 'just uploaded';
			link.after(badge);
		}
		showRowNote(row);
	}
}

// Fetch the page again and swap its list in: the uploads' lines and the
// form keep their state.  After an upload (first) it is the first page of
// the same order and filter, where a new document is when newest first:
// the cursor and a form post's message are left behind.
async function refreshList(first) {
	const url = new URL(location.href);
	if (first) {
		for (const k of ['after', 'created', 'error'])
			url.searchParams.delete(k);
		if (url.href !== location.href)
			history.replaceState(null, '', url.href);
	}
	const r = await fetch(url.href, { headers: { Accept: 'text/html' }, cache: 'no-store' });
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
		const r = await send('PUT', appUrl(`/documents/${row.dataset.id}/content`), Object.assign({
			'If-Match': row.dataset.etag, 'Content-Type': file.type || 'application/octet-stream' },
			auth()), file, loaded => rowSay(row, `Replacing: ${readableSize(loaded)} of ${readableSize(file.size)}`));
		if (r.status === 200) {
			rowSay(row, 'Replaced.', 'done');
			await refreshList(false);
		} else {
			rowSay(row, 'Not replaced: ' + reason(r), 'err');
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
		await refreshList(false);
	} else {
		rowSay(row, 'Not deleted: ' + reason(r), 'err');
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
