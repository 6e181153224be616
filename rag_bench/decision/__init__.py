"""Decisions, apart from their views (docs/architecture.md): which measure ranks the cells and how
(``decide``), the verdict (``verdict``), main effects and interactions (``effects``) and whether
cells' parameters are comparable (``params``). Read by search/, reporting/, the CLI and the API;
imports none of them."""
