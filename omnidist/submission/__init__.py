"""After compile, the I/O: the client template every cloud fills in (:mod:`~omnidist.submission.clients`),
the backend base class that submits through it (:mod:`~omnidist.submission.cloud`), retries
(:mod:`~omnidist.submission.retry`), the job handle and its wait loop (:mod:`~omnidist.submission.handle`,
:mod:`~omnidist.submission.progress`) and code packaging (:mod:`~omnidist.submission.packaging`).

(Named ``submission`` rather than ``submit``: ``omnidist.submit`` is the API function of SPEC §4.)"""
