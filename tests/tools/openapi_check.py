#!/usr/bin/env python3
"""openapi_check.py - doc/openapi.yaml against itself and against real answers.

    openapi_check.py spec SPEC          the document: it parses, is OpenAPI 3.1,
                                        every $ref resolves, every schema is a
                                        valid JSON Schema 2020-12 schema
    openapi_check.py answers SPEC DIR   every answer recorded in DIR (see below)
                                        against the operation it answers

An answer in DIR is three files with a common stem: STEM.req (key=value
lines: server, method, path -- the spec's path template -- and what, a
description; or response=NAME to check against components/responses/NAME,
for the 404 and 405 that no operation owns; with allow_for=PATH, a
405's Allow must list exactly the document's methods of PATH), STEM.head
(curl -D) and
STEM.body (the bytes, read as bytes).

Each check prints one line, "ok DESC" or "not ok DESC: WHY", for
tests/e2e/openapi.sh to turn into TAP.  Exit status 1 when any failed.
Debian's python3-yaml and python3-jsonschema (4.10 in Debian 12); the
$refs are resolved here, so no version's resolver API matters.
"""
import json
import os
import re
import sys

import jsonschema
import jsonschema.exceptions
import yaml

FAILED = 0
RESPONSES = {}  # (path, method) -> its responses, $refs resolved
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def report(good, desc, why=""):
    global FAILED
    if good:
        print("ok %s" % desc)
    else:
        FAILED += 1
        print("not ok %s: %s" % (desc, why.replace("\n", " ")[:600]))


def pointer(doc, ref):
    """The node a local $ref names, or KeyError."""
    if not ref.startswith("#/"):
        raise KeyError("not a local reference: %s" % ref)
    node = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(part)]
        else:
            node = node[part]
    return node


def refs_in(node, where="#"):
    """Every ($ref, where) in the document."""
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"], where
        for k, v in node.items():
            yield from refs_in(v, where + "/" + str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from refs_in(v, "%s/%d" % (where, i))


def deref(doc, node, depth=0):
    """node with every $ref replaced by its target (siblings merged over it)."""
    if depth > 50:
        raise ValueError("$ref nesting too deep (a cycle?)")
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            target = deref(doc, pointer(doc, node["$ref"]), depth + 1)
            rest = {k: deref(doc, v, depth + 1) for k, v in node.items() if k != "$ref"}
            if isinstance(target, dict):
                merged = dict(target)
                merged.update(rest)
                return merged
            return target
        return {k: deref(doc, v, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [deref(doc, v, depth + 1) for v in node]
    return node


def schemas_in(doc):
    """(where, schema) for every schema the document holds."""
    comps = doc.get("components", {})
    for name, s in comps.get("schemas", {}).items():
        yield "components/schemas/" + name, s
    for name, p in comps.get("parameters", {}).items():
        if "schema" in p:
            yield "components/parameters/%s/schema" % name, p["schema"]
    for name, h in comps.get("headers", {}).items():
        if "schema" in h:
            yield "components/headers/%s/schema" % name, h["schema"]

    def content(where, c):
        for mt, m in (c or {}).items():
            if "schema" in m:
                yield "%s/content/%s/schema" % (where, mt), m["schema"]

    def response(where, r):
        for hn, h in (r.get("headers") or {}).items():
            if "schema" in h:
                yield "%s/headers/%s/schema" % (where, hn), h["schema"]
        yield from content(where, r.get("content"))

    for name, r in comps.get("responses", {}).items():
        yield from response("components/responses/" + name, r)
    for path, item in doc.get("paths", {}).items():
        for p in item.get("parameters", []):
            if "schema" in p:
                yield "paths/%s/parameters/%s" % (path, p.get("name")), p["schema"]
        for method, op in item.items():
            if method == "parameters" or not isinstance(op, dict):
                continue
            where = "paths/%s/%s" % (path, method)
            for p in op.get("parameters", []):
                if "schema" in p:
                    yield "%s/parameters/%s" % (where, p.get("name")), p["schema"]
            if "requestBody" in op:
                yield from content(where + "/requestBody", op["requestBody"].get("content"))
            for status, r in op.get("responses", {}).items():
                yield from response("%s/responses/%s" % (where, status), r)


def load(path):
    # libyaml's loader when python3-yaml has it: ten times faster.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path, "rb") as f:
        return yaml.load(f, Loader=loader)


def check_spec(path):
    try:
        doc = load(path)
    except Exception as e:  # noqa: BLE001 - any parse error is the finding
        report(False, "the document parses as YAML", str(e))
        return None
    report(isinstance(doc, dict), "the document parses as YAML", "not a mapping")
    if not isinstance(doc, dict):
        return None
    report(str(doc.get("openapi", "")).startswith("3.1."), "openapi is 3.1.x",
           "openapi: %r" % doc.get("openapi"))
    report(isinstance(doc.get("paths"), dict) and doc["paths"], "it has paths", "no paths")
    bad = []
    n = 0
    for ref, where in refs_in(doc):
        n += 1
        try:
            pointer(doc, ref)
        except (KeyError, IndexError, ValueError, TypeError) as e:
            bad.append("%s at %s (%s)" % (ref, where, e))
    report(not bad, "every $ref resolves (%d)" % n, "; ".join(bad))
    bad = []
    n = 0
    # check_schema() with one validator of the meta-schema for all of them.
    meta = jsonschema.Draft202012Validator(jsonschema.Draft202012Validator.META_SCHEMA)
    for where, schema in schemas_in(doc):
        n += 1
        try:
            err = jsonschema.exceptions.best_match(meta.iter_errors(deref(doc, schema)))
        except (KeyError, IndexError, ValueError, TypeError) as e:  # a bad $ref
            err = e
        if err is not None:
            bad.append("%s: %s" % (where, getattr(err, "message", err)))
    report(n > 0 and not bad, "every schema is valid JSON Schema 2020-12 (%d)" % n, "; ".join(bad))
    return doc


def read_req(path):
    req = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            req[k] = v
    return req


def read_head(path):
    """(status, {lower-case name: value}) of the last header block curl wrote."""
    with open(path, "rb") as f:
        text = f.read().decode("latin-1")
    blocks = [b for b in re.split(r"\r?\n\r?\n", text) if b.strip()]
    if not blocks:
        return None, {}
    lines = blocks[-1].splitlines()
    m = re.match(r"HTTP/[0-9.]+ ([0-9]{3})", lines[0])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return (int(m.group(1)) if m else None), headers


def media_matches(declared, actual):
    if declared == "*/*":
        return True
    if declared.endswith("/*"):
        return actual.startswith(declared[:-1])
    return declared == actual


def check_answer(doc, stem):
    req = read_req(stem + ".req")
    status, headers = read_head(stem + ".head")
    with open(stem + ".body", "rb") as f:
        body = f.read()
    method = req.get("method", "").lower()
    desc = "%s: %s %s %s -> %s" % (req.get("server", "?"), req.get("method"), req.get("path"),
                                   req.get("what", ""), status)
    why = []
    if "response" in req:
        try:
            resp = deref(doc, pointer(doc, "#/components/responses/" + req["response"]))
        except KeyError:
            report(False, desc, "no components/responses/%s" % req["response"])
            return
    else:
        op = doc.get("paths", {}).get(req.get("path"), {}).get(method)
        if op is None:
            report(False, desc, "the document has no %s %s" % (method.upper(), req.get("path")))
            return
        key = (req.get("path"), method)
        if key not in RESPONSES:
            RESPONSES[key] = deref(doc, op.get("responses", {}))
        responses = RESPONSES[key]
        resp = responses.get(str(status), responses.get("default"))
        if resp is None:
            report(False, desc, "status %s is not declared (declared: %s)" %
                   (status, ", ".join(sorted(responses))))
            return
    if "allow_for" in req:
        # A 405's Allow against the document: the methods the code takes on
        # this path are the ones the document describes.
        item = doc.get("paths", {}).get(req["allow_for"], {})
        documented = {m.upper() for m in item if m in HTTP_METHODS}
        allowed = {m.strip() for m in headers.get("allow", "").split(",") if m.strip()}
        if documented != allowed:
            why.append("Allow says %s, the document has %s for %s" %
                       (sorted(allowed), sorted(documented), req["allow_for"]))
    for name, h in (resp.get("headers") or {}).items():
        value = headers.get(name.lower())
        if value is None:
            if h.get("required"):
                why.append("required header %s is absent" % name)
            continue
        if "schema" in h:
            errs = [e.message for e in jsonschema.Draft202012Validator(h["schema"]).iter_errors(value)]
            if errs:
                why.append("header %s: %r: %s" % (name, value, "; ".join(errs)))
    content = resp.get("content") or {}
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    if method == "head":
        pass  # no body, whatever the headers say
    elif not content:
        if body:
            why.append("a body (%d bytes, %s) where none is declared" % (len(body), ctype or "no type"))
    else:
        mt = next((m for m in content if media_matches(m, ctype)), None)
        if mt is None:
            why.append("Content-Type %r is not one declared (%s)" % (ctype, ", ".join(content)))
        elif mt == "application/json" or mt.endswith("+json"):
            try:
                value = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                why.append("the body is not JSON: %s" % e)
            else:
                schema = content[mt].get("schema", {})
                v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
                for e in v.iter_errors(value):
                    why.append("body at /%s: %s" % ("/".join(str(p) for p in e.absolute_path), e.message))
    report(not why, desc, "; ".join(why))


def check_answers(spec, directory):
    doc = load(spec)
    stems = sorted(os.path.join(directory, f[:-4]) for f in os.listdir(directory) if f.endswith(".req"))
    report(bool(stems), "answers were recorded in %s" % directory, "none")
    seen = set()
    for stem in stems:
        req = read_req(stem + ".req")
        seen.add((req.get("path"), req.get("method", "").lower()))
        check_answer(doc, stem)
    untried = ["%s %s" % (m.upper(), p) for p, item in doc.get("paths", {}).items()
               for m in item if m in HTTP_METHODS and (p, m) not in seen]
    report(not untried, "every operation of the document was exercised", ", ".join(untried))


def main(argv):
    if len(argv) == 3 and argv[1] == "spec":
        check_spec(argv[2])
    elif len(argv) == 4 and argv[1] == "answers":
        check_answers(argv[2], argv[3])
    else:
        print("usage: openapi_check.py spec SPEC | answers SPEC DIR", file=sys.stderr)
        return 2
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
