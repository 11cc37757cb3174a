#!/usr/bin/python3
"""fake_entra.py - Microsoft Entra ID's token endpoint and Azure IMDS's, on
loopback, for tests.

Neither service can run on a test machine, so this is the suite's one fake
of a service: it checks a request the way the real ones do, and a client
that passes here has done what Entra asks.  /usr/bin/python3 on purpose:
Debian's python3-cryptography (38) verifies the PS256 assertions.

    fake_entra.py --port-file F --tenant TENANT --client-id CLIENT
        [--secret-file PATH] [--certificate PEM] [--federated-token-file PATH]
        [--imds-client-id ID]... [--lifetime SECONDS] [--log FILE]

It listens on 127.0.0.1, a port of the kernel's choosing, written to F
(atomically, once it listens; removed at exit), and stops on SIGTERM.

POST /TENANT/oauth2/v2.0/token (client credentials, form-encoded):
    grant_type=client_credentials, client_id=CLIENT,
    scope=https://storage.azure.com/.default, and one credential:
    client_secret (the secret file's text, a final newline dropped), or
    client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer
    with client_assertion: the federated token file's text, or a certificate
    assertion verified as Entra does (PS256: PSS, SHA-256, MGF1-SHA-256, salt
    32, by the certificate's key; x5t#S256 its SHA-256 thumbprint; aud this
    endpoint's URL; iss = sub = CLIENT; nbf <= now + 5 min; exp > now;
    exp - nbf <= 1 h; a jti never seen before).
GET /metadata/identity/oauth2/token?api-version=2018-02-01
        &resource=https://storage.azure.com/[&client_id=ID]
    with "Metadata: true" and no X-Forwarded-For, ID one of --imds-client-id
    (without one: the only identity, if there is only one).

Errors are shaped like Entra's: {"error", "error_description":"AADSTSn: ...",
"error_codes":[n], "timestamp", "trace_id", "correlation_id", "error_uri"}.
The codes the tests rely on: 90002 (no such tenant), 700016 (unknown
client), 7000215 (bad secret), 700027 (bad assertion); for the rest the
nearest real code.

The access token is a JWT: {"alg":"RS256","typ":"JWT"}, {"aud":
"https://storage.azure.com","iss":"https://sts.windows.net/TENANT/","iat",
"nbf","exp","oid","tid","appid"}, with random bytes for a signature:
Azurite's --oauth basic checks the claims, not the signature.

POST /_control, a JSON object, each member optional, for faults:
    {"reset": true}           back to no faults (applied first)
    {"audience": "URL"}       tokens for that aud
    {"expired": true}         tokens whose exp is past (the answer's
                              expires_in still says the lifetime: a client
                              that trusts it meets a token storage refuses)
    {"lifetime": N}           tokens for N seconds
    {"refuse": true}          every token request: 401 invalid_client 7000215
    {"status": N}             every token request: status N, Entra's shape
    {"delay": SECONDS}        every token request waits that long first
  answers the faults now in force.
GET /_control: {"token_requests", "issued": {"secret", "certificate",
"federated", "imds"}, "refused"}.

One line per request goes to --log: its path, outcome and status; never a
secret, an assertion or a token.
"""

import argparse
import base64
import binascii
import datetime
import hmac
import json
import os
import re
import signal
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

SCOPE = "https://storage.azure.com/.default"
STORAGE_AUDIENCE = "https://storage.azure.com"
IMDS_PATH = "/metadata/identity/oauth2/token"
IMDS_API_VERSION = "2018-02-01"
IMDS_RESOURCES = ("https://storage.azure.com/", "https://storage.azure.com")
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
SKEW = 300              # Entra's tolerance for clocks, seconds
ASSERTION_MAX = 3600    # the longest assertion lifetime accepted
BODY_MAX = 64 * 1024    # a token request is a few KiB
FAULTS_DEFAULT = {"audience": None, "expired": False, "lifetime": None,
                  "refuse": False, "status": None, "delay": 0}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text):
    """The bytes of unpadded base64url text; ValueError unless the text is
    exactly what b64url() writes for them."""
    if not re.fullmatch(r"[A-Za-z0-9_-]*", text) or len(text) % 4 == 1:
        raise ValueError("not unpadded base64url")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as e:
        raise ValueError(str(e)) from None
    if b64url(data) != text:
        raise ValueError("not canonical base64url")
    return data


def compact(obj):
    return json.dumps(obj, separators=(",", ":"))


def read_text(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return text[:-1] if text.endswith("\n") else text


class Refusal(Exception):
    """An answer in Entra's error shape."""

    def __init__(self, status, error, code, description):
        super().__init__(description)
        self.status, self.error, self.code = status, error, code
        self.description = description


class Entra:
    """What the server knows and counts, shared by the handler threads."""

    def __init__(self, args):
        self.tenant = args.tenant
        self.client_id = args.client_id
        self.lifetime = args.lifetime
        self.secret = read_text(args.secret_file) if args.secret_file else None
        self.federated = (read_text(args.federated_token_file)
                          if args.federated_token_file else None)
        self.imds_ids = list(args.imds_client_id or [])
        self.cert_key = self.thumbprint = None
        if args.certificate:
            with open(args.certificate, "rb") as f:
                cert = x509.load_pem_x509_certificate(f.read())
            self.cert_key = cert.public_key()
            if not isinstance(self.cert_key, rsa.RSAPublicKey):
                raise ValueError(f"{args.certificate}: not an RSA certificate")
            self.thumbprint = b64url(cert.fingerprint(hashes.SHA256()))
        self.port = None
        self.lock = threading.Lock()
        self.seen_jti = set()
        self.faults = dict(FAULTS_DEFAULT)
        self.counts = {"token_requests": 0, "issued": {"secret": 0,
                       "certificate": 0, "federated": 0, "imds": 0},
                       "refused": 0}
        self.log = open(args.log, "a", encoding="utf-8") if args.log else None

    def endpoint(self):
        return f"http://127.0.0.1:{self.port}/{self.tenant}/oauth2/v2.0/token"

    def note(self, line):
        if self.log is None:
            return
        with self.lock:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            self.log.write(f"{stamp} {line}\n")
            self.log.flush()

    def access_token(self, appid):
        """A token as Entra would issue for storage, under the faults."""
        with self.lock:
            faults = dict(self.faults)
        lifetime = faults["lifetime"] or self.lifetime
        now = int(time.time())
        start = now - lifetime - 600 if faults["expired"] else now
        claims = {"aud": faults["audience"] or STORAGE_AUDIENCE,
                  "iss": f"https://sts.windows.net/{self.tenant}/",
                  "iat": start, "nbf": start, "exp": start + lifetime,
                  # One object id per application, as Entra keeps it.
                  "oid": str(uuid.uuid5(uuid.NAMESPACE_URL,
                                        f"fake-entra:{self.tenant}:{appid}")),
                  "tid": self.tenant, "appid": appid}
        header = {"alg": "RS256", "typ": "JWT"}
        token = ".".join((b64url(compact(header).encode()),
                          b64url(compact(claims).encode()),
                          b64url(os.urandom(256))))
        return token, lifetime, now

    def issued(self, kind):
        with self.lock:
            self.counts["issued"][kind] += 1

    def refused(self):
        with self.lock:
            self.counts["refused"] += 1

    def jti_fresh(self, jti):
        """True the first time jti is seen; it is then remembered."""
        with self.lock:
            if jti in self.seen_jti:
                return False
            self.seen_jti.add(jti)
            return True

    def verify_certificate_assertion(self, assertion, client_id):
        """Check a certificate assertion as Entra does; Refusal (700027)
        saying what failed."""
        def bad(why):
            return Refusal(401, "invalid_client", 700027,
                           f"Client assertion failed validation: {why}.")
        if self.cert_key is None:
            raise bad("no certificate is registered for the application")
        parts = assertion.split(".")
        if len(parts) != 3:
            raise bad("not a compact JWS of three parts")
        try:
            header = json.loads(b64url_decode(parts[0]))
            payload = json.loads(b64url_decode(parts[1]))
            signature = b64url_decode(parts[2])
        except ValueError as e:
            raise bad(f"a part is not base64url JSON ({e})") from None
        if not isinstance(header, dict) or not isinstance(payload, dict):
            raise bad("the header or the payload is not a JSON object")
        if header.get("alg") != "PS256":
            raise bad(f"alg is {header.get('alg')!r}, not PS256")
        if header.get("typ", "JWT") != "JWT":
            raise bad(f"typ is {header.get('typ')!r}, not JWT")
        if header.get("x5t#S256") != self.thumbprint:
            raise bad("x5t#S256 does not name the registered certificate")
        signing_input = f"{parts[0]}.{parts[1]}".encode("ascii")
        try:
            self.cert_key.verify(
                signature, signing_input,
                padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32),
                hashes.SHA256())
        except InvalidSignature:
            raise bad("the signature does not verify by the registered "
                      "certificate's key (PS256, salt 32)") from None
        if payload.get("aud") != self.endpoint():
            raise bad(f"aud is {payload.get('aud')!r}, not {self.endpoint()}")
        if payload.get("iss") != client_id or payload.get("sub") != client_id:
            raise bad("iss and sub must both be the client id")
        nbf, exp = payload.get("nbf"), payload.get("exp")
        if (not isinstance(nbf, int) or isinstance(nbf, bool) or
                not isinstance(exp, int) or isinstance(exp, bool)):
            raise bad("nbf and exp must be integers")
        now = int(time.time())
        if nbf > now + SKEW:
            raise bad(f"nbf is {nbf - now} s in the future")
        if exp <= now:
            raise bad(f"expired {now - exp} s ago")
        if exp - nbf > ASSERTION_MAX:
            raise bad(f"valid for {exp - nbf} s, longer than {ASSERTION_MAX}")
        jti = payload.get("jti")
        if not isinstance(jti, str) or jti == "":
            raise bad("no jti")
        if not self.jti_fresh(jti):
            raise bad("the jti was seen before (a replay)")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-entra"
    sys_version = ""

    @property
    def entra(self):
        return self.server.entra

    def log_message(self, format, *args):  # noqa: A002 - the base's name
        pass  # our own line per request instead (never the query's secrets)

    def answer(self, status, body, outcome):
        data = compact(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store, no-cache")
        self.send_header("Pragma", "no-cache")
        self.end_headers()
        self.wfile.write(data)
        path = urllib.parse.urlsplit(self.path).path
        self.entra.note(f"{self.command} {path} {status} {outcome}")

    def refuse(self, r):
        now = datetime.datetime.now(datetime.timezone.utc)
        trace, correlation = str(uuid.uuid4()), str(uuid.uuid4())
        stamp = now.strftime("%Y-%m-%d %H:%M:%SZ")
        self.entra.refused()
        self.answer(r.status, {
            "error": r.error,
            "error_description": f"AADSTS{r.code}: {r.description} "
                                 f"Trace ID: {trace} Correlation ID: "
                                 f"{correlation} Timestamp: {stamp}",
            "error_codes": [r.code],
            "timestamp": stamp,
            "trace_id": trace,
            "correlation_id": correlation,
            "error_uri": f"https://login.microsoftonline.com/error?code={r.code}",
        }, f"refused AADSTS{r.code} {r.description}")

    def read_body(self):
        """The request's body, read whole before anything is answered: a
        refusal must not leave bytes on a kept-alive connection.  None (and
        the connection closed after the answer) when it cannot be read."""
        if self.command != "POST":
            return b""
        length = self.headers.get("Content-Length", "")
        if not length.isdigit() or int(length) > BODY_MAX:
            self.close_connection = True
            return None
        return self.rfile.read(int(length))

    def faults_first(self):
        """The faults every token request meets before it is read."""
        with self.entra.lock:
            self.entra.counts["token_requests"] += 1
            faults = dict(self.entra.faults)
        if faults["delay"]:
            time.sleep(faults["delay"])
        if faults["status"]:
            status = faults["status"]
            raise Refusal(status, "temporarily_unavailable" if status == 503
                          else "server_error", 90033 if status == 503 else 50000,
                          f"A fault asked for status {status}.")
        if faults["refuse"]:
            raise Refusal(401, "invalid_client", 7000215,
                          "Invalid client secret provided (a fault refuses "
                          "every request).")

    # -- the token endpoint ------------------------------------------------

    def token(self, tenant):
        self.faults_first()
        if tenant != self.entra.tenant:
            raise Refusal(400, "invalid_request", 90002,
                          f"Tenant '{tenant}' not found. Check to make sure "
                          "you have the correct tenant ID and are signing "
                          "into the correct cloud.")
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip()
        raw = self.raw_body
        if raw is None:
            raise Refusal(400, "invalid_request", 9002313, "Invalid request. "
                          "Request is malformed or invalid (no Content-Length "
                          "or a body over 64 KiB).")
        if ctype.lower() != "application/x-www-form-urlencoded":
            raise Refusal(400, "invalid_request", 900144, "The request body "
                          "must contain the following parameter: "
                          "'grant_type' (it is not form-encoded).")
        try:
            pairs = urllib.parse.parse_qsl(raw.decode("utf-8"),
                                           keep_blank_values=True,
                                           strict_parsing=bool(raw),
                                           errors="strict")
        except (UnicodeDecodeError, ValueError):
            raise Refusal(400, "invalid_request", 9002313, "Invalid request. "
                          "Request is malformed or invalid.") from None
        form = {}
        for name, value in pairs:
            if name in form:
                raise Refusal(400, "invalid_request", 9002313, "Invalid "
                              f"request. '{name}' is given twice.")
            form[name] = value

        def need(name):
            if not form.get(name):
                raise Refusal(400, "invalid_request", 900144, "The request "
                              "body must contain the following parameter: "
                              f"'{name}'.")
            return form[name]

        if need("grant_type") != "client_credentials":
            raise Refusal(400, "unsupported_grant_type", 70003, "The app "
                          "requested an unsupported grant type "
                          f"'{form['grant_type']}'.")
        client_id = need("client_id")
        if client_id != self.entra.client_id:
            raise Refusal(400, "unauthorized_client", 700016, "Application "
                          f"with identifier '{client_id}' was not found in "
                          f"the directory '{tenant}'.")
        if need("scope") != SCOPE:
            raise Refusal(400, "invalid_scope", 1002012, "The provided value "
                          f"for scope {form['scope']} is not valid; this "
                          f"fake issues {SCOPE} only.")
        secret, assertion = form.get("client_secret"), form.get("client_assertion")
        if secret is not None and assertion is not None:
            raise Refusal(400, "invalid_request", 9002313, "Invalid request: "
                          "both client_secret and client_assertion.")
        if secret is not None:
            if self.entra.secret is None or not hmac.compare_digest(
                    secret.encode(), self.entra.secret.encode()):
                raise Refusal(401, "invalid_client", 7000215,
                              "Invalid client secret provided. Ensure the "
                              "secret being sent in the request is the "
                              "client secret value, not the client secret "
                              f"ID, for a secret added to app '{client_id}'.")
            return self.issue("secret", client_id)
        if assertion is None:
            raise Refusal(401, "invalid_client", 7000216, "'client_assertion',"
                          " 'client_secret' or 'request' is required for the "
                          "'client_credentials' grant type.")
        if form.get("client_assertion_type") != ASSERTION_TYPE:
            raise Refusal(400, "invalid_request", 9002313, "Invalid request: "
                          f"client_assertion_type must be {ASSERTION_TYPE}.")
        if self.entra.federated is not None and hmac.compare_digest(
                assertion.encode(), self.entra.federated.encode()):
            return self.issue("federated", client_id)
        if self.entra.cert_key is None and self.entra.federated is not None:
            raise Refusal(401, "invalid_client", 700211, "No matching "
                          "federated identity record found for presented "
                          "assertion.")
        self.entra.verify_certificate_assertion(assertion, client_id)
        return self.issue("certificate", client_id)

    def issue(self, kind, client_id):
        token, lifetime, _ = self.entra.access_token(client_id)
        self.entra.issued(kind)
        self.answer(200, {"token_type": "Bearer", "expires_in": lifetime,
                          "ext_expires_in": lifetime, "access_token": token},
                    f"issued {kind}")

    # -- IMDS --------------------------------------------------------------

    def imds(self, query):
        def imds_refusal(status, error, description):
            # IMDS answers in its own, shorter shape.
            r = Refusal(status, error, 0, description)
            r.imds = True
            return r

        self.faults_first()
        if self.headers.get("Metadata") != "true":
            raise imds_refusal(400, "invalid_request",
                               "Required metadata header not specified")
        if self.headers.get("X-Forwarded-For") is not None:
            raise imds_refusal(400, "invalid_request",
                               "Request is not allowed through a proxy "
                               "(X-Forwarded-For)")
        try:
            q = dict(urllib.parse.parse_qsl(query, keep_blank_values=True,
                                            strict_parsing=bool(query)))
        except ValueError:
            raise imds_refusal(400, "invalid_request",
                               "Malformed query") from None
        if "api-version" not in q:
            raise imds_refusal(400, "invalid_request",
                               "Required query variable 'api-version' is "
                               "missing")
        if q["api-version"] != IMDS_API_VERSION:
            raise imds_refusal(400, "invalid_request",
                               f"Invalid api-version (this fake serves "
                               f"{IMDS_API_VERSION})")
        if q.get("resource") not in IMDS_RESOURCES:
            raise imds_refusal(400, "invalid_resource",
                               "AADSTS500011: The resource principal named "
                               f"{q.get('resource')} was not found")
        ids = self.entra.imds_ids
        client_id = q.get("client_id")
        if client_id is None and len(ids) > 1:
            raise imds_refusal(400, "invalid_request",
                               "Multiple user assigned identities exist, "
                               "please specify the clientId / resourceId of "
                               "the identity in the token request")
        if client_id is None and len(ids) == 1:
            client_id = ids[0]
        if client_id is None or client_id not in ids:
            raise imds_refusal(400, "invalid_request", "Identity not found")
        token, lifetime, now = self.entra.access_token(client_id)
        self.entra.issued("imds")
        # IMDS hands out cached tokens: its expires_in runs a second short.
        self.answer(200, {"access_token": token, "client_id": client_id,
                          "expires_in": str(lifetime - 1),
                          "expires_on": str(now + lifetime),
                          "ext_expires_in": str(lifetime - 1),
                          "not_before": str(now),
                          "resource": q["resource"],
                          "token_type": "Bearer"}, "issued imds")

    # -- control -----------------------------------------------------------

    def control_set(self):
        try:
            if self.raw_body is None:
                raise ValueError("a JSON body of at most 64 KiB")
            asked = json.loads(self.raw_body)
            if not isinstance(asked, dict):
                raise ValueError("not a JSON object")
            unknown = set(asked) - set(FAULTS_DEFAULT) - {"reset"}
            if unknown:
                raise ValueError(f"unknown members {sorted(unknown)}")
            checks = {"audience": lambda v: v is None or isinstance(v, str),
                      "expired": lambda v: isinstance(v, bool),
                      "lifetime": lambda v: v is None or (
                          isinstance(v, int) and not isinstance(v, bool) and v > 0),
                      "refuse": lambda v: isinstance(v, bool),
                      "status": lambda v: v is None or (
                          isinstance(v, int) and 400 <= v <= 599),
                      "delay": lambda v: isinstance(v, (int, float)) and
                      not isinstance(v, bool) and 0 <= v <= 600,
                      "reset": lambda v: isinstance(v, bool)}
            for k, v in asked.items():
                if not checks[k](v):
                    raise ValueError(f"{k}: {v!r} is not allowed")
        except ValueError as e:
            self.answer(400, {"error": str(e)}, "control refused")
            return
        with self.entra.lock:
            if asked.pop("reset", False):
                self.entra.faults = dict(FAULTS_DEFAULT)
            self.entra.faults.update(asked)
            now = dict(self.entra.faults)
        self.answer(200, now, "control " + compact(now))

    def control_get(self):
        with self.entra.lock:
            counts = json.loads(compact(self.entra.counts))
        self.answer(200, counts, "control")

    # -- dispatch ----------------------------------------------------------

    def dispatch(self):
        url = urllib.parse.urlsplit(self.path)
        m = re.fullmatch(r"/([^/]+)/oauth2/v2\.0/token", url.path)
        self.raw_body = self.read_body()
        try:
            if url.path == "/_control":
                if self.command == "POST":
                    return self.control_set()
                if self.command == "GET":
                    return self.control_get()
            elif m is not None:
                if self.command != "POST":
                    raise Refusal(405, "invalid_request", 900561, "The "
                                  "endpoint only accepts POST requests.")
                return self.token(urllib.parse.unquote(m.group(1)))
            elif url.path == IMDS_PATH and self.command == "GET":
                return self.imds(url.query)
            self.answer(404, {"error": "not_found"}, "no such endpoint")
        except Refusal as r:
            if getattr(r, "imds", False):
                self.entra.refused()
                self.answer(r.status, {"error": r.error,
                                       "error_description": r.description},
                            f"refused {r.description}")
            else:
                self.refuse(r)

    do_GET = dispatch
    do_POST = dispatch


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port-file", required=True)
    p.add_argument("--tenant", required=True)
    p.add_argument("--client-id", required=True)
    p.add_argument("--secret-file")
    p.add_argument("--certificate")
    p.add_argument("--federated-token-file")
    p.add_argument("--imds-client-id", action="append")
    p.add_argument("--lifetime", type=int, default=3600)
    p.add_argument("--log")
    args = p.parse_args()
    if args.lifetime <= 0:
        p.error("--lifetime must be positive")
    try:
        entra = Entra(args)
    except (OSError, ValueError) as e:
        print(f"fake_entra: {e}", file=sys.stderr)
        return 2

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.entra = entra
    entra.port = server.server_address[1]

    def stop(signum, frame):
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)

    tmp = f"{args.port_file}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(f"{entra.port}\n")
    os.replace(tmp, args.port_file)
    entra.note(f"listening on 127.0.0.1:{entra.port} tenant {entra.tenant}")
    try:
        server.serve_forever()
    finally:
        server.server_close()
        try:
            os.unlink(args.port_file)
        except OSError:
            pass
        entra.note("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
