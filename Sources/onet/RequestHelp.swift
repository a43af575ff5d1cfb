/// The discussion of `onet request --help`: the grammar, the defaults, the exit statuses, and the
/// table of the places where onet does not do what httpie 3.2 does, on purpose (the README has the
/// same table; `HTTPieParityTests` checks every invocation that differs against it).
enum RequestHelp {
    static let discussion = """
    The words are httpie's: the same words send the same request, on the wire
    and at the exit status.

    Request items (after the URL):
      name==value      a query parameter (a name may repeat); name==@file reads it
      name=value       a JSON string field (a form field with --form, --multipart)
      name:=json       a raw JSON value: n:=1 ok:=true tags:='["a"]'
      name=@file       a string field holding a text file; name:=@file a JSON file
      user[name]=ada   nested JSON: a[]:=1 appends, a[2]=x sets an index,
                       []:=1 makes the body an array, \\[ keeps a bracket
      Header:value     a header; 'Header:' removes a default one, 'Header;'
                       sends it empty, Header:@file reads its value
      name@file        a file part of a multipart form (--form);
                       name@file;type=mime names its type
      @file            the file is the body (typed from its name)
    A backslash makes the next ':', '=', '@' or ';' part of the name.

    The method is GET, or POST when there is data: data items, --raw, or a
    standard input that is not a terminal (it is the body: pass --ignore-stdin
    in scripts). JSON data sends Accept: application/json, */*;q=0.5 and
    Content-Type: application/json; --form a URL-encoded form. Redirects are
    shown, not followed, unless --follow. The URL may omit http:// (':8080/x'
    means http://localhost:8080/x).

    Output: the body when standard output is not a terminal; the response head
    and body (JSON indented, coloured) on a terminal. -p/--print chooses with
    H (request head), B (request body), h (response head), b (response body),
    m (elapsed time and the transfer's timings); -v shows the request too, and
    every redirect or authentication hop the library made; -vv adds m; -h the
    response head, -b the body, -q nothing. The heads shown are the ones sent,
    Authorization, Proxy-Authorization and Cookie values as *** unless
    --show-secrets. --download saves the body (progress on standard error;
    --continue resumes a partial --output file with a Range request).

    Exit status (httpie's): 0, even for a 4xx or 5xx, unless --check-status:
    then 3 for a 3xx not followed, 4 for a 4xx, 5 for a 5xx (--download always
    checks); 1 for an error (connection refused, DNS, TLS or pinning refusal, a
    usage error, a file that cannot be read or written, an incomplete
    download); 2 for a timeout; 6 for too many redirects.

    Deliberate differences from httpie 3.2 (httpie | onet: why):
      User-Agent: HTTPie/3.2.1 | the library's own (onet, the OS, libcurl)
      A repeated header (X-A:1 X-A:2): two fields | one field 'X-A: 1, 2':
        a request holds one value per name; RFC 9110 5.3 makes them equal
      Accept: (removing Accept): no Accept | Accept: */*: libcurl always sends
        one, and */* says what none says (Accept-Encoding: sends identity)
      302 after PUT or DELETE with --follow: a GET follows | the method is
        kept: the library turns only POST into GET (RFC 9110 15.4.3 allows it)
      Digest (-A digest): 2 requests | 3: libcurl sends the request once more
        without credentials, to read the challenge itself
      Through an HTTP proxy: no Proxy-Connection | libcurl adds
        Proxy-Connection: Keep-Alive
      --verify FILE: replaces the system's CAs | trusted besides them
      --timeout: none by default | 60 s without progress (the library's)
      --max-redirects above 16: followed | the library stops at 16 (exit 6)
      A file part of unknown type: no Content-Type | application/octet-stream
        (the library's multipart builder types every file part)
      Heads shown: secrets as sent | *** unless --show-secrets
      --session NAME: ~/.config/httpie/sessions | ~/.config/onet/sessions
        (same layout; during the run the cookies live in the library's
        cookie storage)
      --unix-socket PATH: no such option (a plugin) | curl's: the request
        goes over the socket, the URL's host still names Host

    Examples:
      onet request :8080/users                        GET, the JSON shown
      onet request :8080/users name=Ada admin:=true   POST {"name": "Ada", ...}
      onet request PUT :8080/users/1 'tags[]=a' X-Trace:1
      onet request -f :8080/upload avatar@./me.png caption=hello
      echo '{"a":1}' | onet request :8080/items        standard input: the body
      onet request -a ada:secret -v https://api.example/me
      onet request -F --check-status https://example.com/old
      onet request -d -o big.iso https://example.com/big.iso   (-c continues)
      onet request --session=work -a ada:pw api.example/login
      onet request --pin-key server.pem --retry 2 https://api.example/health
      onet request --unix-socket /var/run/docker.sock localhost/v1.43/info
    """
}
