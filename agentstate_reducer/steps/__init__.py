"""The reduction steps: the contract (:mod:`~agentstate_reducer.steps.contract`), then one
module per family of built-in steps (``clear``, ``compress``, ``drop``, ``relevance``,
``summarize``, ``truncate``) and the policy checks (:mod:`~agentstate_reducer.steps.policy`).

Users import the steps from :mod:`agentstate_reducer.policy`, which re-exports them all;
this package imports none of its modules, so importing the contract loads no step.
"""
