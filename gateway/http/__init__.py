"""The HTTP edge: thin handlers that parse, authorize, call one domain operation and map it."""
