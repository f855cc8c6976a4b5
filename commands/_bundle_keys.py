"""Ed25519 keys for run bundles: `swecl keygen`, signing a bundle's manifest, checking it.

Through `cryptography` (the PyCA library) rather than by hand: a signature scheme is not
something to write again. A private key is a PEM file (PKCS#8, unencrypted, mode 0600);
its public half sits beside it as `NAME.pub` (PEM). A key's fingerprint is the SHA-256
of its 32 raw public bytes, in hex: what `swecl check --key` pins and the leaderboard
shows. A bundle carries the public key itself, so anyone can check the signature; the
fingerprint says whose it is.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from ledger import SweclError

FINGERPRINT_HEX = 64


@dataclass(frozen=True)
class KeyPair:
    private: Path
    public: Path
    fingerprint: str


def fingerprint_of(public_raw: bytes) -> str:
    return hashlib.sha256(public_raw).hexdigest()


def generate_key(path: str | os.PathLike[str]) -> KeyPair:
    """Write a new Ed25519 private key to `path` (0600) and its public key to `path.pub`;
    refuses to overwrite either."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private_path = Path(path)
    public_path = private_path.with_name(private_path.name + ".pub")
    for existing in (private_path, public_path):
        if existing.exists():
            raise SweclError(f"{existing} exists already; choose another name (a key is never overwritten)")
    if not private_path.parent.is_dir():
        raise SweclError(f"{private_path.parent}: no such directory")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    public = key.public_key()
    # O_EXCL and mode 0600 from the start: the secret half is never readable by others,
    # not even for the moment between writing and a chmod.
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    public_path.write_bytes(public.public_bytes(serialization.Encoding.PEM,
                                                serialization.PublicFormat.SubjectPublicKeyInfo))
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return KeyPair(private_path, public_path, fingerprint_of(raw))


def sign(private_key_path: str | os.PathLike[str], message: bytes) -> tuple[str, str, str]:
    """Sign `message` with the Ed25519 key in the PEM file: (signature hex, public key hex,
    fingerprint). A file that is not such a key is refused in one line."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    path = Path(private_key_path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SweclError(f"--sign {path}: cannot read the key ({exc.strerror or exc})") from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise SweclError(f"--sign {path}: not an unencrypted PEM private key ({exc}); make one with `swecl keygen`") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SweclError(f"--sign {path}: not an Ed25519 key; make one with `swecl keygen`")
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return key.sign(message).hex(), raw.hex(), fingerprint_of(raw)


def signature_problem(message: bytes, signature_hex: str, public_key_hex: str, fingerprint: str | None) -> str | None:
    """Why the signature does not hold (one line), or None when it does."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        raw = bytes.fromhex(public_key_hex)
        public = Ed25519PublicKey.from_public_bytes(raw)
        signature = bytes.fromhex(signature_hex)
    except ValueError as exc:
        return f"the bundle's public key or signature is malformed ({exc})"
    if fingerprint is not None and fingerprint_of(raw) != fingerprint:
        return "the recorded key fingerprint is not that of the bundle's public key"
    try:
        public.verify(signature, message)
    except InvalidSignature:
        return "the signature does not match the manifest: the manifest was changed after signing, or signed by another key"
    return None


def normalise_fingerprint(given: str) -> str:
    """`--key`: a full hex fingerprint, or a prefix of at least 16 hex digits; a `.pub`
    file's path is read as its key."""
    path = Path(given)
    if given.endswith(".pub") and path.is_file():
        from cryptography.hazmat.primitives import serialization

        try:
            public = serialization.load_pem_public_key(path.read_bytes())
            raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        except (ValueError, TypeError) as exc:
            raise SweclError(f"--key {given}: not a PEM public key ({exc})") from None
        return fingerprint_of(raw)
    text = given.strip().lower().removeprefix("sha256:")
    if len(text) < 16 or len(text) > FINGERPRINT_HEX or any(c not in "0123456789abcdef" for c in text):
        raise SweclError(f"--key {given!r}: give the key's fingerprint (at least 16 hex digits) or its .pub file")
    return text
