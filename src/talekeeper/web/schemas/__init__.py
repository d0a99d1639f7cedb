"""The JSON API's response models, one module per area of the API.

Each model is the contract of what a route answers: built from a service's typed result
(a dataclass, read with ``from_attributes``), never from a hand-made dict. The model, not
the service, decides what the API shows: a field a service result gains stays out of the
answer until the model declares it, and a field the model declares that the result lacks
fails the request (and so the suite) rather than going missing.
"""
