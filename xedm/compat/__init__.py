"""Other EDM packages' APIs on xedm: :mod:`xedm.compat.pyedm` (``from xedm.compat import
pyedm as pyEDM`` runs a pyEDM script on xedm).  Nothing here imports the peers themselves."""
