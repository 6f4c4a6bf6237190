"""Azure Blob storage URLs are told from plain downloads."""

from __future__ import annotations

from omnidist_azure.storage import is_blob_url


def test_azure_storage_urls_are_told_from_plain_downloads():
    assert is_blob_url("https://acct.blob.core.windows.net/c/x")
    assert is_blob_url("https://acct.dfs.core.windows.net/c/x")
    assert not is_blob_url("https://example.com/blob.core.windows.net")
