"""``KMSKeyProvider``: AWS KMS as the key provider of sealed stores (``agent_stores.core.sealing``)."""

from __future__ import annotations

import asyncio
import base64
from typing import Any, cast

from botocore.exceptions import ClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from agent_stores.core import StoreError, StoreUnavailableError
from agent_stores.core.sealing import SealingKeyError

__all__ = ["KMSKeyProvider"]

#: KMS answers meaning the key cannot be used for this ciphertext or by these credentials.
_KEY_CODES = frozenset(
    {
        "AccessDeniedException",
        "DisabledException",
        "IncorrectKeyException",
        "InvalidCiphertextException",
        "InvalidKeyUsageException",
        "KMSInvalidStateException",
        "NotFoundException",
    }
)
_CONTEXT_KEY = "agent-stores"


class KMSKeyProvider:
    """Wraps data keys with an AWS KMS key (``Encrypt``/``Decrypt``, the scope as encryption context).

    ``KMSKeyProvider(key_id, client=boto3.client("kms"))`` borrows a client;
    ``KMSKeyProvider(key_id, **client_kwargs)`` makes one (``region_name``, ``endpoint_url``...;
    the region of a key ARN unless ``region_name`` is given). Without code: the URL option
    ``kms_key_id=`` or the environment variable ``AGENT_STORES_KMS_KEY_ID`` (the client then
    takes the usual AWS configuration, ``AWS_ENDPOINT_URL_KMS`` included).
    Pass it as ``open_stores(url, encryption=KMSKeyProvider(...))``. Each wrap or unwrap is one
    KMS call, off the event loop; unwrapped data keys are cached by the sealed stores, so KMS is
    called once per tenant and process. Unwrapping needs ``kms:Decrypt`` on the key a data key
    was wrapped with (any key id of the account, after a rotation), wrapping ``kms:Encrypt``.

    Raises:
        ValueError: ``key_id`` is empty.
    """

    def __init__(self, key_id: str, *, client: Any = None, **client_kwargs: Any) -> None:
        if not key_id:
            raise ValueError("a KMS key id, ARN or alias is required")
        if client is None:
            import boto3

            if key_id.startswith("arn:") and key_id.count(":") >= 5 and "region_name" not in client_kwargs:
                client_kwargs["region_name"] = key_id.split(":")[3]

            client = cast(Any, boto3).client("kms", **client_kwargs)
        self.client: Any = client
        self._key_id = key_id

    @property
    def key_id(self) -> str:
        """The KMS key new data keys are wrapped with."""
        return self._key_id

    async def wrap(self, data_key: bytes, *, context: bytes) -> bytes:
        """``Encrypt`` ``data_key`` under :attr:`key_id`."""
        answer = await self._call(
            self._key_id, "encrypt", KeyId=self._key_id, Plaintext=data_key, EncryptionContext=_context(context)
        )
        return bytes(answer["CiphertextBlob"])

    async def unwrap(self, key_id: str, wrapped: bytes, *, context: bytes) -> bytes:
        """``Decrypt`` a data key wrapped under ``key_id``.

        Raises:
            SealingKeyError: KMS refused: the key is unknown, disabled or not allowed, or the
                ciphertext does not open with this context.
            StoreUnavailableError: KMS could not be reached (nothing is written).
        """
        answer = await self._call(
            key_id, "decrypt", KeyId=key_id, CiphertextBlob=wrapped, EncryptionContext=_context(context)
        )
        return bytes(answer["Plaintext"])

    async def _call(self, key_id: str, operation: str, **arguments: Any) -> dict[str, Any]:
        try:
            return await asyncio.to_thread(getattr(self.client, operation), **arguments)
        except ClientError as err:
            code = str(err.response.get("Error", {}).get("Code", ""))
            if code in _KEY_CODES:
                raise SealingKeyError(f"KMS refused key-encryption key {key_id!r} ({code})") from err
            status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
            if status >= 500:
                raise StoreUnavailableError(f"KMS did not serve {operation} ({code})") from err
            raise StoreError(f"KMS refused {operation} with key {key_id!r} ({code})") from err
        except BotoConnectionError as err:
            raise StoreUnavailableError(f"KMS could not be reached ({type(err).__name__})") from err

    def __repr__(self) -> str:
        return f"KMSKeyProvider({self._key_id!r})"


def _context(context: bytes) -> dict[str, str]:
    return {_CONTEXT_KEY: base64.b64encode(context).decode("ascii")}
