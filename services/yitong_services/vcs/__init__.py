"""Virtual clusters: VCs, profiles, quotas, allocations, quantities, the inventory."""
