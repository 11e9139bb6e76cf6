"""Loading what engines queue: the loader of a storage and target, and its parts.

lease     one loader per storage and target
tick      what one load takes from the queue
drain     loading a tick through a `SyncLog`
service   the loader's loop (`synclog loader run`), `flush` (`synclog flush`) and `take_over`
process   the loader as a background process (`synclog loader start|stop`)
"""
