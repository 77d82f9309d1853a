
Bclassifier.3.biasJ(юV╬Лчл╬m╦л=╝▌л=ЭRл=рдл=■Sм=4²л=Б┴л=3X╬