"""The bytecode backend: a program's loop, branch, call and handler counts without rewriting its source.

``plan`` maps the source instrumentor's feature ids to the bytecode that marks each count;
:mod:`mantispy.runtime.monitor` counts them in the running program (sys.monitoring on 3.12+,
sys.settrace on 3.11); ``launch`` runs a program under it.
"""
