"""kemuctl, the user's command line (kubectl's conventions for the subset kemu serves)."""
