"""What an image build lets out, checked without a Docker engine: the CA served on Docker's
bridge (certificates only, never a private key) and the Debian mirror's URL (no secret in
what the image keeps: its history, its sources.list, a vendor archive's manifest)."""

import hashlib
import re
import shutil
import ssl
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.project.test_images import ROOT, _noxfile

# Obviously fake PEM bodies: the framing is what bench reads, never the key inside.
FAKE_BODY = "RkFLRS1ub3QtYS1rZXktb25seS1hLWJlbmNoLXRlc3Q=\n"


class Refused(Exception):
    pass


class Session:
    """The one nox.Session method the checks call: error() raises, as nox's does."""

    def error(self, message: str) -> None:
        raise Refused(message)


def _pem(label: str, body: str = FAKE_BODY) -> str:
    return f"-----BEGIN {label}-----\n{body}-----END {label}-----\n"


@pytest.fixture(scope="module")
def cert_and_key(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-made CA certificate and its private key, made now (none is committed)."""
    if shutil.which("openssl") is None:
        return _pem("CERTIFICATE"), _pem("PRIVATE KEY")
    folder = tmp_path_factory.mktemp("ca")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem"),
         "-days", "1", "-subj", "/CN=bench test proxy CA"],
        check=True, capture_output=True,
    )  # fmt: skip
    return (folder / "cert.pem").read_text(), (folder / "key.pem").read_text()


@pytest.fixture
def bridge_on_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """`docker network inspect bridge` answers loopback: _served_ca serves on 127.0.0.1."""
    run = subprocess.run

    def fake(args, *rest, **kwargs):  # type: ignore[no-untyped-def]
        if list(args[:3]) == ["docker", "network", "inspect"]:
            return subprocess.CompletedProcess(args, 0, "127.0.0.1 127.0.0.0/8\n", "")
        return run(args, *rest, **kwargs)

    monkeypatch.setattr(_noxfile().subprocess, "run", fake)


def _serve(bundle: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, dict[str, str]]:
    monkeypatch.setenv("BENCH_CA_BUNDLE", str(bundle))
    with _noxfile()._served_ca(Session(), str(bundle)) as args:
        return urllib.request.urlopen(args["BENCH_CA_URL"], timeout=10).read(), args


# --- item 6: the build CA ------------------------------------------------------------------


def test_a_ca_bundle_with_its_private_key_is_refused_before_it_is_served(
    tmp_path, monkeypatch, cert_and_key, bridge_on_loopback
):
    """mitmproxy's mitmproxy-ca.pem holds the CA's key and certificate: served whole, every
    container on Docker's bridge could fetch the key and intercept the build's TLS."""
    cert, key = cert_and_key
    bundle = tmp_path / "mitmproxy-ca.pem"
    bundle.write_text(key + cert)
    monkeypatch.setenv("BENCH_CA_BUNDLE", str(bundle))
    with pytest.raises(Refused) as refused, _noxfile()._served_ca(Session(), str(bundle)):
        pass
    message = str(refused.value)
    assert str(bundle) in message and "private key" in message and "\n" not in message
    assert "certificate alone" in message
    assert key.splitlines()[1] not in message


@pytest.mark.parametrize(
    "label", ["PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY",
              "DSA PRIVATE KEY", "OPENSSH PRIVATE KEY"],
)  # fmt: skip
def test_every_kind_of_private_key_block_is_refused(label):
    with pytest.raises(ValueError, match="private key"):
        _noxfile()._ca_certificates((_pem("CERTIFICATE") + _pem(label)).encode())


@pytest.mark.parametrize(
    "text", ["", "# no certificate here\n", _pem("X509 CRL"), "-----BEGIN CERTIFICATE-----\nAAAA\n"]
)
def test_a_bundle_without_a_whole_certificate_is_refused(text):
    with pytest.raises(ValueError, match="no certificate"):
        _noxfile()._ca_certificates(text.encode())


def test_only_the_certificates_are_served_and_their_sha256_is_the_one_checked(
    tmp_path, monkeypatch, cert_and_key, bridge_on_loopback
):
    """Comments, CRLs and anything between the blocks stay on this machine; what install.sh
    fetches is the certificates alone, and the sha256 it checks is theirs."""
    cert, _key = cert_and_key
    bundle = tmp_path / "corp-ca.pem"
    bundle.write_text(
        "# Issuer: the corporate proxy\n" + cert + "some notes\n" + _pem("X509 CRL") + cert
    )
    served, args = _serve(bundle, monkeypatch)
    assert served == (cert + cert).encode()
    assert args["BENCH_CA_SHA256"] == hashlib.sha256(served).hexdigest()
    if shutil.which("openssl"):  # a real certificate: what is served loads as a CA file
        ssl.create_default_context(cadata=served.decode())


def test_a_certificate_body_that_is_not_base64_is_refused():
    text = "-----BEGIN CERTIFICATE-----\nnot base64: {}\n-----END CERTIFICATE-----\n"
    with pytest.raises(ValueError, match="not base64"):
        _noxfile()._ca_certificates(text.encode())


# --- item 7: the Debian mirror -------------------------------------------------------------

SECRET = "0123456789abcdefSECRETTOKEN123"


@pytest.mark.parametrize(
    "mirror",
    [
        " https://user:pw@host.example/debian",  # a leading space hid the credentials
        "https://user:pw@host.example/debian",
        "HTTPS://ci@host.example/debian",
        f"https://host.example/{SECRET}/debian",  # a token in the path
        f"https://host.example/debian/{SECRET}",
        f"https://host.example/repo%2F{SECRET}/debian",
        "https://host.example/550e8400-e29b-41d4-a716-446655440000/debian",  # a UUID token
        f"https://{SECRET}.host.example/debian",  # a token as a host name
        "https://host.example/debian?token=abc",  # a token in the query
        "https://host.example/debian?",
        "https://host.example/debian#token=abc",
        "https://host.example/debian;token=abc",
        "http://host.example/debian\n",  # a second line in sources.list
        "http://host.example/de bian",
        "http://host.example/debian\t",
        "http://host.example/\x7fdebian",
        "http://host.example/debian\r",
        "http://hôst.example/debian",
        "ftp://host.example/debian",
        "file:///srv/debian",
        "host.example/debian",
        "http:///debian",
        "http://host.example:port/debian",
        "http://[::1/debian",  # the review's: a bracket unclosed was a ValueError traceback
        "http://m]/d",  # and one never opened
    ],
)
def test_a_mirror_that_could_carry_a_secret_is_refused(mirror, monkeypatch):
    """A build argument stays in `docker history`, the mirror in the base's commit and a
    vendor archive's manifest: no URL that can carry a credential gets there."""
    monkeypatch.setenv("BENCH_DEBIAN_MIRROR", mirror)
    with pytest.raises(Refused) as refused:
        _noxfile()._debian_mirror(Session())
    message = str(refused.value)
    assert message.startswith("BENCH_DEBIAN_MIRROR: ") and "\n" not in message
    for secret in (":pw@", SECRET, "token=abc", "550e8400"):
        assert secret not in message  # the refusal does not print it either


@pytest.mark.parametrize(
    "mirror",
    [
        "http://deb.debian.org/debian",
        "https://deb.debian.org/debian/",
        "http://snapshot.debian.org/archive/debian/20260803T000000Z",
        "http://apt-cacher.lan:3142/deb.debian.org/debian",
        "http://[fd00::1]:3142/debian",
        "http://10.0.0.5/debian",
        "https://nexus.corp.example/repository/debian-bookworm-2024-proxy/",
        "https://mirror.example/~archive/debian_12",
    ],
)
def test_a_plain_mirror_passes(mirror, monkeypatch):
    monkeypatch.setenv("BENCH_DEBIAN_MIRROR", mirror)
    assert _noxfile()._debian_mirror(Session()) == mirror


def test_the_build_arguments_and_so_the_vendor_manifest_get_only_a_checked_mirror(monkeypatch):
    """`nox -s vendor` records args["DEBIAN_MIRROR"] in its manifest: refused before then."""
    monkeypatch.delenv("BENCH_BASE_IMAGE", raising=False)
    monkeypatch.setenv("BENCH_DEBIAN_MIRROR", "http://deb.debian.org/debian")
    args, _ = _noxfile()._build_args(Session(), "xeon", choose=False)  # an offline build's
    assert args["DEBIAN_MIRROR"] == "http://deb.debian.org/debian"
    monkeypatch.setenv("BENCH_DEBIAN_MIRROR", f" https://host.example/{SECRET}/debian?token=abc")
    with pytest.raises(Refused):
        _noxfile()._build_args(Session(), "xeon", choose=False)
    with pytest.raises(Refused):  # an online build's (and vendor's), before any probe
        _noxfile()._debian_source(Session())


def test_install_removes_the_sources_list_that_names_the_mirror_in_the_same_step():
    """The whole install is one RUN step: a file it removes is in no layer. The apt block
    must end by removing the sources.list it wrote and the package lists it fetched."""
    script = (ROOT / "images" / "common" / "install.sh").read_text()
    block = re.search(
        r'^if \[ -n "\$packages" \] && \[ "\$offline" = no \]; then\n(.*?)^fi$', script, re.M | re.S
    )
    assert block, "install.sh's apt block has moved: update this test"
    lines = [line.strip() for line in block.group(1).splitlines() if line.strip()]
    writes = [i for i, line in enumerate(lines) if "> /etc/apt/sources.list" in line]
    last_apt = max(i for i, line in enumerate(lines) if "apt-get" in line)
    removals = [
        i
        for i, line in enumerate(lines)
        if re.match(r"rm -[rf]+ .*/etc/apt/sources\.list(\s|$)", line)
    ]
    assert writes and removals and max(removals) > max(writes[-1], last_apt), lines
    assert any("/var/lib/apt/lists/*" in line for line in lines[last_apt + 1 :])
    dockerfile = (ROOT / "images" / "common" / "Dockerfile").read_text()
    assert len(re.findall(r"install\.sh", "\n".join(re.findall(r"^RUN .*", dockerfile, re.M)))) == 1
