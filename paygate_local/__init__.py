"""Running the whole system on one machine with no configuration (``paygate up``)."""
