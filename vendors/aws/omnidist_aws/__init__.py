"""AWS, once for every backend that runs on it: boto3 clients with the settings' endpoint,
profile and timeouts and botocore's errors as omnidist's (:mod:`~omnidist_aws.session`), code
staged to S3 with its MD5 checked (:mod:`~omnidist_aws.s3`), CloudWatch Logs read page by page
(:mod:`~omnidist_aws.cloudwatch`), EC2 instance shapes (:mod:`~omnidist_aws.ec2`), and where
AWS prices come from (:mod:`~omnidist_aws.prices`).

What it declares to the core (entry point ``omnidist.vendors``) is in :mod:`~omnidist_aws.vendor`:
its price rows and lists, its image registries' hosts, its object stores' URI schemes and its
tools' credential files.

A vendor kit: it imports the core only through :mod:`omnidist.kit` and names no backend; the
backends that run on AWS depend on it and import from it directly.
"""
