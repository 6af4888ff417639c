"""The brief's URL fetcher refuses what it must before any socket opens, and reads what it may.

Nothing here sends a packet past loopback: addresses that are not loopback are only ever "resolved" by
`NamesResolver` (a table, no DNS), and every client runs with `RecordingConnector`, which records each
connection it is asked for and refuses any that is not to 127.0.0.1, so a refusal test asserts both the
one-line refusal and that no connection was even attempted.
"""

from __future__ import annotations

import pytest

from orchestrator.brief.addresses import AllowedHosts, parse_address, why_forbidden
from orchestrator.brief.fetch import TIMEOUT_S, Fetcher, FetchError, FetchPolicy, FetchRefused
from tests.brief_fetch_harness import RecordingConnector, fetcher
from tests.fakes.web_source import SourceServer


@pytest.mark.parametrize(("url", "reason"), [
    ("http://127.0.0.1/", "loopback"),
    ("http://[::1]/", "loopback"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://10.0.0.1/", "private"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),
    ("http://[::ffff:a9fe:a9fe]/", "link-local"),  # 169.254.169.254, IPv4-mapped in hex
    ("http://[fd00::1]/", "unique-local"),
    ("http://[fe80::1]/", "link-local"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://224.0.0.1/", "multicast"),
    ("http://[64:ff9b::a00:1]/", "private"),  # 10.0.0.1 through NAT64
    ("file:///etc/passwd", "only http and https"),
    ("ftp://example.com/file.txt", "only http and https"),
    ("http://user:secret@example.com/", "user name or password"),
    ("http://example.com:8080/", "port 8080 is not allowed"),
])
async def test_refused_before_any_connection(url: str, reason: str) -> None:
    client, attempts, resolver = fetcher(names={"example.com": ["93.184.216.34"]})
    with pytest.raises(FetchRefused) as refused:
        await client.fetch(url)
    line = str(refused.value)
    assert reason in line and "\n" not in line
    assert "secret" not in line  # a URL's password is never repeated
    assert attempts == []
    assert resolver.asked == []  # an address literal, a scheme or a port is refused without a lookup


async def test_a_public_name_that_resolves_to_a_private_address_is_refused() -> None:
    client, attempts, resolver = fetcher(names={"wiki.example.com": ["10.20.30.40"]})
    with pytest.raises(FetchRefused, match=r"private address \(wiki.example.com resolves to 10.20.30.40\)"):
        await client.fetch("https://wiki.example.com/page")
    assert resolver.asked == ["wiki.example.com"] and attempts == []


async def test_every_address_of_a_name_is_checked() -> None:
    client, attempts, _ = fetcher(names={"mixed.example.com": ["93.184.216.34", "169.254.169.254"]})
    with pytest.raises(FetchRefused, match="link-local"):
        await client.fetch("http://mixed.example.com/")
    assert attempts == []


async def test_a_redirect_from_an_allowed_host_to_a_private_one_is_refused() -> None:
    async with SourceServer() as web:
        client, attempts, _ = fetcher(allow=web.allow_hosts)
        with pytest.raises(FetchRefused, match=r"redirected to http://10.0.0.1/.*private"):
            await client.fetch(web.url("/redirect?to=http://10.0.0.1/admin"))
        assert [r["path"] for r in web.requests] == ["/redirect"]
        assert attempts == ["127.0.0.1->127.0.0.1"]  # the allowed server, and nothing after it


async def test_more_than_five_redirects_are_refused() -> None:
    async with SourceServer() as web:
        client, _, _ = fetcher(allow=web.allow_hosts)
        with pytest.raises(FetchRefused, match="more than 5 redirects"):
            await client.fetch(web.url("/loop"))
        assert len(web.requests) == 6  # the first request and five redirects followed; the sixth is not


async def test_a_six_megabyte_body_is_refused() -> None:
    async with SourceServer() as web:
        client, _, _ = fetcher(allow=web.allow_hosts)
        with pytest.raises(FetchRefused, match="larger than the 5 MB"):
            await client.fetch(web.url("/big"))
        with pytest.raises(FetchRefused, match="larger than the 5 MB"):  # no Content-Length: cut while read
            await client.fetch(web.url("/big-chunked"))


async def test_a_body_that_never_ends_is_cut_at_the_time_cap() -> None:
    """The product's cap is 10 s; the test lowers it so the 15-second body costs a fraction of a second."""
    assert TIMEOUT_S == 10.0 and FetchPolicy().timeout_s == 10.0
    async with SourceServer() as web:
        client, _, _ = fetcher(allow=web.allow_hosts, timeout_s=0.3)
        with pytest.raises(FetchError, match=r"took longer than 0\.3 s"):
            await client.fetch(web.url("/slow"))


async def test_an_image_is_refused() -> None:
    async with SourceServer() as web:
        client, _, _ = fetcher(allow=web.allow_hosts)
        with pytest.raises(FetchRefused, match="image/png is not read"):
            await client.fetch(web.url("/image.png"))


async def test_loopback_is_refused_unless_the_operator_allows_that_host_and_port() -> None:
    async with SourceServer() as web:
        web.pages["/doc.md"] = ("text/markdown; charset=utf-8", b"# Plan\n\nShip it.")
        client, attempts, _ = fetcher()
        with pytest.raises(FetchRefused, match="port"):
            await client.fetch(web.url("/doc.md"))
        client, attempts_host_only, _ = fetcher(allow="127.0.0.1")  # the host alone allows ports 80 and 443 only
        with pytest.raises(FetchRefused, match="port"):
            await client.fetch(web.url("/doc.md"))
        assert web.requests == [] and attempts == [] and attempts_host_only == []
        client, _, _ = fetcher(allow=web.allow_hosts)
        page = await client.fetch(web.url("/doc.md"))
        assert page.body == b"# Plan\n\nShip it." and page.content_type == "text/markdown"
        headers = web.requests[-1]["headers"]
        assert headers["User-Agent"].startswith("debate-bot/")
        assert "Cookie" not in headers and "Authorization" not in headers


async def test_a_name_is_looked_up_once_and_connected_to_as_checked() -> None:
    """An allowed name that resolves to loopback: one lookup, and the connection goes to that address."""
    async with SourceServer() as web:
        web.pages["/a.txt"] = ("text/plain", b"pinned")
        client, attempts, resolver = fetcher(allow=f"docs.example.test:{web.port}",
                                             names={"docs.example.test": ["127.0.0.1"]})
        page = await client.fetch(f"http://docs.example.test:{web.port}/a.txt")
        assert page.body == b"pinned"
        assert resolver.asked == ["docs.example.test"]
        assert attempts == ["docs.example.test->127.0.0.1"]
        assert web.requests[-1]["headers"]["Host"] == f"docs.example.test:{web.port}"


async def test_fetching_can_be_switched_off() -> None:
    client, attempts, resolver = fetcher(enabled=False)
    with pytest.raises(FetchRefused, match="DEBATE_FETCH=off"):
        await client.fetch("https://example.com/")
    assert attempts == [] and resolver.asked == []


def test_address_rules() -> None:
    assert why_forbidden(parse_address("93.184.216.34")) is None  # type: ignore[arg-type]
    assert why_forbidden(parse_address("2606:2800:220:1:248:1893:25c8:1946")) is None  # type: ignore[arg-type]
    assert why_forbidden(parse_address("100.64.0.1"))  # type: ignore[arg-type]  # carrier-grade NAT
    assert why_forbidden(parse_address("2002:0a00:0001::1"))  # type: ignore[arg-type]  # 6to4 of 10.0.0.1
    allowed = AllowedHosts.parse("wiki.corp, 127.0.0.1:8081, [::1]:9000")
    assert allowed.allows_host("WIKI.corp", 443) and not allowed.allows_host("wiki.corp", 8080)
    assert allowed.allows_port("127.0.0.1", 8081) and allowed.allows_host("::1", 9000)
    assert not allowed.allows_port("127.0.0.1", 8082)


@pytest.mark.parametrize("url", ["http://2130706433/", "http://0x7f000001/", "http://127.1/", "http://0177.0.0.1/"])
async def test_other_spellings_of_loopback_are_refused_once_resolved(url: str) -> None:
    """Decimal, hex, short and octal forms are names to the URL parser; the system's resolver (a numeric
    parse, no DNS) turns them into 127.0.0.1, which the check refuses before any connection."""
    attempts: list[str] = []
    client = Fetcher(FetchPolicy(), connector=lambda pinned: RecordingConnector(pinned, attempts))
    with pytest.raises(FetchRefused, match="loopback"):
        await client.fetch(url)
    assert attempts == []
