"""Compile: a placement applied as affinities and compiled by HETERO, a placed model saved with its placement and compiled again from it."""
