"""The oracle service: interpretations in; oracles and one judge request per criterion out."""
