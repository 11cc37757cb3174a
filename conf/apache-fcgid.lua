-- conf/apache-fcgid.lua -- mod_lua helpers for conf/apache-fcgid.conf.
--
-- Why: mod_fcgid 2.3.9 reads a request's whole body before it starts
-- bindery.  When the client's body ends before its Content-Length (or its
-- last chunk), mod_fcgid logs "can't get data from http client" and
-- answers 500 itself; bindery never runs, so nothing is stored, but the
-- client is told the server failed.  It is the client's fault: 400.
-- mod_fcgid says nothing an ErrorDocument can see (no ERROR_NOTES), and an
-- ErrorDocument served by bindery or any CGI would read the same broken
-- body again and fail too.  So body_whole notes, as the body passes, that
-- Apache read it to its end, and error_document (Apache's ErrorDocument
-- 500, which does not read the body) answers 400 bad_body for a request
-- that had a body Apache never read whole, and a JSON 500 otherwise (a
-- responder that died after the body arrived stays a server error).  It
-- only ever sets a status and a fixed JSON body; it changes nothing.

-- LuaInputFilter: passes every bucket on untouched; once the end of the
-- body arrives, marks the request.  A read error never reaches Lua, so a
-- body cut short leaves the mark unset.
function body_whole(r)
	coroutine.yield()
	while bucket do
		coroutine.yield(bucket)
	end
	r.subprocess_env["BINDERY_BODY_WHOLE"] = "1"
end

-- LuaMapHandler for the ErrorDocument URL.  Apache hands an ErrorDocument
-- the failed request's environment with REDIRECT_ in front of each name.
function error_document(r)
	local env = r.subprocess_env
	local status = env["REDIRECT_STATUS"]
	local had_body = (tonumber(env["REDIRECT_CONTENT_LENGTH"] or "0") or 0) > 0 or
		env["REDIRECT_HTTP_TRANSFER_ENCODING"] ~= nil

	r.content_type = "application/json"
	if status == nil then
		-- Asked for directly, not as an error document.
		r.status = 404
		r:puts('{"error":"not_found","message":"no such route"}\n')
	elseif status == "500" and had_body and env["REDIRECT_BINDERY_BODY_WHOLE"] ~= "1" then
		r.status = 400
		r:puts('{"error":"bad_body","message":"the request body ended before its declared length"}\n')
	else
		r.status = 500
		r:puts('{"error":"internal","message":"the web server could not run the request"}\n')
	end
	return apache2.OK
end
