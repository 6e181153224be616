"""The filters of drafting, a file each: each keeps or drops a draft and says why (docs/drafting.md)."""
