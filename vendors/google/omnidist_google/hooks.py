"""The hooks every backend on Google Cloud answers the same way, as a mixin it lists before
:class:`omnidist.kit.Placement` (the credentials a client would use: Application Default
Credentials, or the ``credentials`` setting). google.auth is imported only when a hook runs."""

from __future__ import annotations

from typing import Any, ClassVar

from omnidist.kit import Credentials


class GoogleCredentials:
    """``find_credentials`` and ``check_credentials`` for a backend whose settings have Google's
    ``credentials`` setting (``default``, ``anonymous`` or a key file's path)."""

    name: ClassVar[str]

    def find_credentials(self, settings: Any) -> Credentials:
        """Application Default Credentials (or the ``credentials`` setting), looked up offline."""
        from omnidist_google.google_cloud import find_google_credentials

        return find_google_credentials(settings.credentials)

    def check_credentials(self, settings: Any) -> Credentials:
        """The credentials found, refreshed into a token (nothing is created)."""
        from omnidist_google.google_cloud import check_google_credentials

        return check_google_credentials(settings.credentials, self.name)
