"""Lean ``ListObjectsV2`` answers on the clients the S3 backend makes: keys only, not one dict per object.

botocore turns every listed object into a dict of five fields, parsing its ``LastModified``
into a ``datetime``; listing keys needs none of that, and for a page of 1,000 keys it costs
more than the request. :func:`skim_listings` registers, on one client's own event hooks, a
``before-parse`` step that takes the keys out of each answer's body and hands them over as
``LISTED_KEYS``, so botocore parses only what is left (prefixes, truncation, token). An answer
of a shape it does not expect is left whole for botocore.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote_plus

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client

__all__ = ["LISTED_KEYS", "skim_listings"]

#: The field of a skimmed answer holding its object keys, in the answer's order, decoded as
#: botocore would decode ``Contents[].Key``; absent when botocore parsed the answer itself.
LISTED_KEYS: Final = "AgentStoresKeys"

_CONTENTS = re.compile(rb"<Contents>(.*?)</Contents>", re.DOTALL)
_KEY = re.compile(rb"<Key>([^<]*)</Key>")
_ENTITY = re.compile(r"&(#x[0-9A-Fa-f]+|#[0-9]+|amp|lt|gt|quot|apos);")
_NAMED: Final = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_URL_ENCODED: Final = b"<EncodingType>url</EncodingType>"


def skim_listings(client: S3Client) -> None:
    """Make ``client``'s ``ListObjectsV2`` answers carry ``LISTED_KEYS`` instead of ``Contents``.

    Only for a client the backend made and owns: the hook is the client's own (botocore copies
    the event hooks per client), so no other client of the same session changes.
    """
    client.meta.events.register("before-parse.s3.ListObjectsV2", _skim)


def _skim(response_dict: dict[str, Any], customized_response_dict: dict[str, Any], **_: Any) -> None:
    if response_dict.get("status_code") != 200:
        return
    body = response_dict.get("body")
    if not isinstance(body, bytes) or b"<Contents>" not in body:
        return
    raw_keys: list[bytes] = []
    for block in _CONTENTS.findall(body):
        found = _KEY.findall(block)
        if len(found) != 1:
            return  # not the answer we know: botocore parses all of it
        raw_keys.append(found[0])
    rest = _CONTENTS.sub(b"", body)
    if b"<Contents>" in rest or b"<Key>" in rest:
        return
    # botocore asks for url-encoded keys on every listing and decodes them when the server did so.
    url_encoded = _URL_ENCODED in rest
    try:
        keys = [_decode(raw, url_encoded=url_encoded) for raw in raw_keys]
    except (UnicodeDecodeError, ValueError):
        return
    response_dict["body"] = rest
    customized_response_dict[LISTED_KEYS] = keys


def _decode(raw: bytes, *, url_encoded: bool) -> str:
    """An XML text node's value (entities and character references resolved), then url-decoded as botocore does."""
    text = raw.decode("utf-8")
    if "&" in text:
        text = _ENTITY.sub(_entity, text)
    return unquote_plus(text) if url_encoded else text


def _entity(match: re.Match[str]) -> str:
    name = match.group(1)
    if name.startswith("#x"):
        return chr(int(name[2:], 16))
    if name.startswith("#"):
        return chr(int(name[1:]))
    return _NAMED[name]
