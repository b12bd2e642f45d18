"""Orders: the checkout's serialization point (seed 004, "A paid order cannot get another attempt")."""
