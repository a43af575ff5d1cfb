import Foundation

/// The invocations a daily httpie user types (issue 46), grouped as the tests run them. Every word is
/// given to httpie 3.2 and to `onet request` alike; `{u}` is the test server.
enum ParityCases {
    private static let i = "--ignore-stdin"

    /// Request items: the grammar, nested JSON, files, headers, the query.
    static let items: [ParityCase] = [
        ParityCase("get", [i, "{u}/echo"]),
        ParityCase("query-repeat", [i, "{u}/echo", "a==1", "a==2", "b==x", "a==3"]),
        ParityCase("query-escapes", [i, "{u}/echo", "q==a b/@&+é=", "e=="]),
        ParityCase("query-on-url", [i, "{u}/echo?x=1&y=%41", "z==2"]),
        ParityCase("json-fields", [i, "{u}/echo", "name=ada", "n:=1", "ok:=true", "nil:=null"]),
        ParityCase("json-nested", [i, "{u}/echo", "user[name]=ada", "user[langs][]=swift", "a[]:=1", "a[]:=2"]),
        ParityCase("json-index", [i, "{u}/echo", "list[2]=c", "list[0]=a"]),
        ParityCase("json-top-array", [i, "{u}/echo", "[]:=1", "[]:=2"]),
        ParityCase("json-escaped-bracket", [i, "{u}/echo", "a\\[x\\]=z", "\\3=n"]),
        ParityCase("json-repeat", [i, "{u}/echo", "x=1", "x=2", "y=3"]),
        ParityCase("json-raw-object", [i, "{u}/echo", "o:={\"z\":1,\"a\":[1.5,1e3,true,null],\"s\":\"\\u00e9/\"}"]),
        ParityCase("json-duplicate-keys", [i, "{u}/echo", "o:={\"a\":1,\"a\":2}"]),
        ParityCase("json-unicode", [i, "{u}/echo", "name=ünï😀", "tab=a\tb", "quote=\"\\"]),
        ParityCase("json-escaped-separator", [i, "{u}/echo", "a\\=b=c", "k\\:v=1"]),
        ParityCase("json-numbers", [i, "{u}/echo", "f:=1.10", "big:=12345678901234567890", "e:=1e16", "s:=0.00001", "z:=-0"]),
        ParityCase("json-file-text", [i, "{u}/echo", "txt=@a.txt"]),
        ParityCase("json-file-json", [i, "{u}/echo", "j:=@d.json", "x=1"]),
        ParityCase("json-nested-type-error", [i, "{u}/echo", "a=1", "a[b]=2"]),
        ParityCase("json-syntax-error", [i, "{u}/echo", "a[=1"]),
        ParityCase("json-invalid", [i, "{u}/echo", "n:=nope"]),
        ParityCase("json-missing-file", [i, "{u}/echo", "f=@missing.txt"]),
        ParityCase("header", [i, "{u}/echo", "X-A:1", "X-B: spaced "]),
        ParityCase("header-empty", [i, "{u}/echo", "X-E;"]),
        ParityCase("header-repeat", [i, "{u}/echo", "X-A:1", "X-A:2"]),
        ParityCase("header-remove-accept", [i, "{u}/echo", "Accept:"]),
        ParityCase("header-override-accept", [i, "{u}/echo", "Accept:text/plain", "a=1"]),
        ParityCase("header-file", [i, "{u}/echo", "X-F:@a.txt", "q==@a.txt"]),
        ParityCase("header-content-type", [i, "{u}/echo", "Content-Type:text/plain", "a=1"]),
        ParityCase("header-host", [i, "{u}/echo", "Host:example.com"]),
        ParityCase("header-user-agent", [i, "{u}/echo", "User-Agent:custom/1"]),
        ParityCase("header-bad-empty", [i, "{u}/echo", "X;x"]),
        ParityCase("not-an-item", [i, "{u}/echo", "justaword"]),
        ParityCase("unknown-option", [i, "--frobnicate", "{u}/echo"]),
    ]

    /// Methods, bodies (JSON, form, multipart, standard input, `--raw`, files), compression.
    static let bodies: [ParityCase] = [
        ParityCase("method-put", [i, "PUT", "{u}/echo", "a=1"]),
        ParityCase("method-lowercase", [i, "patch", "{u}/echo", "a=1"]),
        ParityCase("method-delete-json", [i, "DELETE", "{u}/echo", "id:=7"]),
        ParityCase("method-post-empty", [i, "POST", "{u}/echo"]),
        ParityCase("method-options", [i, "OPTIONS", "{u}/echo"]),
        ParityCase("method-head", [i, "HEAD", "{u}/echo"]),
        ParityCase("method-custom", [i, "PROPFIND", "{u}/echo"]),
        ParityCase("method-get-body", [i, "GET", "{u}/echo", "a=1"]),
        ParityCase("form", [i, "--form", "{u}/echo", "tag=a", "tag=b", "sp=a b", "sym=x@/&+"]),
        ParityCase("form-grouped", [i, "-f", "{u}/echo", "a=1", "b=2", "a=3"]),
        ParityCase("form-json-scalars", [i, "--form", "{u}/echo", "n:=1", "t:=true", "s:=\"x\""]),
        ParityCase("form-json-complex", [i, "--form", "{u}/echo", "a:=[1]"]),
        ParityCase("form-get", [i, "--form", "GET", "{u}/echo"]),
        ParityCase("form-file-text", [i, "--form", "{u}/echo", "t=@a.txt"]),
        ParityCase("multipart-file", [i, "-f", "{u}/echo", "f@a.txt", "n=1"]),
        ParityCase("multipart-file-type", [i, "-f", "{u}/echo", "g@b.bin;type=image/png", "n=1"]),
        ParityCase("multipart-no-file", [i, "--multipart", "{u}/echo", "n=1", "m=2"]),
        ParityCase("multipart-own-type", [i, "--multipart", "{u}/echo", "n=1", "Content-Type:multipart/mixed"]),
        ParityCase("stdin-post", ["POST", "{u}/echo"], stdin: "{\"a\":1}\n"),
        ParityCase("stdin-default-post", ["{u}/echo"], stdin: "{\"a\":1}"),
        ParityCase("stdin-empty", ["{u}/echo"]),
        ParityCase("stdin-form", ["--form", "{u}/echo"], stdin: "a=1&b=2"),
        ParityCase("stdin-and-items", ["{u}/echo", "a=1"], stdin: "x"),
        ParityCase("stdin-ignored", [i, "{u}/echo"], stdin: "not sent"),
        ParityCase("raw", [i, "--raw", "{\"b\":2}", "{u}/echo"]),
        ParityCase("raw-put", [i, "--raw", "hello", "PUT", "{u}/echo"]),
        ParityCase("raw-and-items", [i, "--raw", "x", "{u}/echo", "a=1"]),
        ParityCase("file-body", [i, "{u}/echo", "@a.txt"]),
        ParityCase("file-body-binary", [i, "PUT", "{u}/echo", "@b.bin"]),
        ParityCase("file-body-own-type", [i, "{u}/echo", "@a.txt", "Content-Type:application/x-custom"]),
        ParityCase("file-field-without-form", [i, "{u}/echo", "f@a.txt"]),
        ParityCase("file-body-and-data", [i, "{u}/echo", "@a.txt", "a=1"]),
        ParityCase("compress", [i, "-x", "{u}/echo", "big=" + String(repeating: "a", count: 400)]),
        ParityCase("compress-not-smaller", [i, "-x", "{u}/echo", "a=1"]),
        ParityCase("compress-always", [i, "-xx", "{u}/echo", "a=1"]),
        ParityCase("json-flag", [i, "-j", "{u}/echo"]),
        ParityCase("json-flag-put", [i, "--json", "PUT", "{u}/echo"]),
    ]

    /// URLs, authentication, redirects, statuses, output selection.
    static let exchanges: [ParityCase] = [
        ParityCase("url-shorthand", [i, ":{port}/echo"]),
        ParityCase("url-no-scheme", [i, "127.0.0.1:{port}/echo"]),
        ParityCase("url-space", [i, "{u}/echo?q=a b"]),
        ParityCase("url-credentials", [i, "http://ada:pw@127.0.0.1:{port}/echo"]),
        ParityCase("url-escaped-unreserved", [i, "{u}/ec%68o"]),
        ParityCase("auth-basic", [i, "-a", "ada:pw", "{u}/auth/basic/ada/pw"]),
        ParityCase("auth-basic-wrong", [i, "-a", "ada:no", "{u}/auth/basic/ada/pw"]),
        ParityCase("auth-basic-check", [i, "--check-status", "-a", "ada:no", "{u}/auth/basic/ada/pw"]),
        ParityCase("auth-bearer", [i, "-A", "bearer", "-a", "token-1", "{u}/echo"]),
        ParityCase("auth-digest", [i, "-A", "digest", "-a", "ada:pw", "{u}/auth/digest/ada/pw"]),
        ParityCase("auth-type-only", [i, "-A", "basic", "{u}/echo"]),
        ParityCase("auth-over-header", [i, "-a", "u:p", "{u}/echo", "Authorization:Bearer x"]),
        ParityCase("redirect-shown", [i, "{u}/redirect/2"]),
        ParityCase("redirect-follow", [i, "--follow", "{u}/redirect/2"]),
        ParityCase("redirect-follow-short", [i, "-F", "{u}/redirect/1"]),
        ParityCase("redirect-max", [i, "-F", "--max-redirects=2", "{u}/redirect/3"]),
        ParityCase("redirect-max-unfollowed", [i, "--max-redirects=1", "{u}/redirect/1"]),
        ParityCase("redirect-check", [i, "--check-status", "{u}/redirect/1"]),
        ParityCase("redirect-follow-check", [i, "--check-status", "-F", "{u}/redirect/1"]),
        ParityCase("redirect-post-302", [i, "-F", "POST", "{u}/redirect/1", "a=1"]),
        ParityCase("redirect-post-307", [i, "-F", "POST", "{u}/redirect/1?status=307", "a=1"]),
        ParityCase("redirect-put-303", [i, "-F", "PUT", "{u}/redirect/1?status=303", "a=1"]),
        ParityCase("redirect-put-302", [i, "-F", "PUT", "{u}/redirect/1?status=302", "a=1"]),
        ParityCase("status-404", [i, "{u}/status/404"]),
        ParityCase("check-404", [i, "--check-status", "{u}/status/404"]),
        ParityCase("check-503", [i, "--check-status", "{u}/status/503"]),
        ParityCase("check-201", [i, "--check-status", "{u}/status/201"]),
        ParityCase("check-quiet", [i, "-q", "--check-status", "{u}/status/500"]),
        ParityCase("refused", [i, "http://127.0.0.1:1/"]),
        ParityCase("timeout", [i, "--timeout=0.5", "{u}/delay/3000"]),
        ParityCase("print-Hh", [i, "-p", "Hh", "{u}/echo", "a=1"]),
        ParityCase("print-headers", [i, "-h", "{u}/echo"]),
        ParityCase("print-body", [i, "-b", "{u}/echo"]),
        ParityCase("verbose", [i, "-v", "{u}/echo", "a=1"]),
        ParityCase("offline", [i, "--offline", "{u}/echo", "a=1"]),
        ParityCase("print-unknown", [i, "-p", "Z", "{u}/echo"]),
    ]

    /// Downloads, sessions, proxies and TLS.
    static let stateful: [ParityCase] = [
        ParityCase("download", [i, "-d", "-o", "out.bin", "{u}/bytes/1000"]),
        ParityCase("download-continue", [i, "-d", "-c", "-o", "part.bin", "{u}/bytes/1000"]) { directory in
            try Data(repeating: 0x41, count: 400).write(to: directory.appendingPathComponent("part.bin"))
        },
        ParityCase("download-404", [i, "-d", "-o", "x.bin", "{u}/status/404"]),
        ParityCase("download-stdout", [i, "-d", "{u}/bytes/100"]),
        ParityCase("download-cut-short", [i, "-d", "-o", "y.bin", "{u}/drop/100000"]),
        ParityCase("download-continue-without-output", [i, "-d", "-c", "{u}/bytes/10"]),
        ParityCase("session", runs: [[i, "--session=s1", "-a", "u:p", "{u}/cookies/set?a=1", "X-Keep:k"],
                                     [i, "--session=s1", "{u}/echo"]]),
        ParityCase("session-path", runs: [[i, "--session=./s.json", "{u}/echo", "X-Keep:k", "a=1"],
                                          [i, "--session=./s.json", "{u}/echo"]]),
        ParityCase("session-cookie-header", runs: [[i, "--session=s3", "{u}/echo", "Cookie:c=3"],
                                                   [i, "--session=s3", "{u}/echo"]]),
        ParityCase("session-read-only", runs: [[i, "--session=s4", "{u}/echo", "X-A:1"],
                                               [i, "--session-read-only=s4", "{u}/echo", "X-A:2"],
                                               [i, "--session=s4", "{u}/echo"]]),
        ParityCase("session-override", runs: [[i, "--session=s5", "{u}/echo", "X-A:1"],
                                              [i, "--session=s5", "{u}/echo", "X-A:2", "X-B:3"]]),
        ParityCase("proxy", [i, "--proxy=http:{u}", "http://example.invalid/x?y=1"]),
        ParityCase("proxy-other-scheme", [i, "--proxy=https:http://127.0.0.1:1", "{u}/echo"]),
    ]

    /// TLS against a server whose CA only `ca.pem` (written by `prepare`) holds.
    static func tls(writingAuthority pem: Data) -> [ParityCase] {
        [
            ParityCase("tls-untrusted", [i, "{tls}/echo"]),
            ParityCase("tls-verify-no", [i, "--verify=no", "{tls}/echo"]),
            ParityCase("tls-verify-bundle", [i, "--verify=ca.pem", "{tls}/echo", "a==1"]) { directory in
                try pem.write(to: directory.appendingPathComponent("ca.pem"))
            },
        ]
    }

    /// The invocations where onet sends something else, or exits otherwise, on purpose: each names the
    /// row of the table in `onet request --help` (and the README) that says why.
    static let deliberate: [String: String] = [
        "header-repeat": "A repeated header (X-A:1 X-A:2)",
        "header-remove-accept": "Accept: (removing Accept)",
        "redirect-put-302": "302 after PUT or DELETE with --follow",
        "auth-digest": "Digest (-A digest)",
        "proxy": "Through an HTTP proxy",
    ]
}
