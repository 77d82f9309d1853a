B
bn2.weightJ ßı=/¾_;/?½„®=ô°m=Q”=ûxU=Èn½