"""reporting stage."""
