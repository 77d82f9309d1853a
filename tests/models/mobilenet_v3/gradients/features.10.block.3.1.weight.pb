Bfeatures.10.block.3.1.weightJ`˜Åt6£Ô9aô)¹-™¹S©ò¸?6ý8–¥?¹TÃ¹]M·8¨b8zq¬9i^=9D
¸¹P!U8l!ú¸»|c8rX!¸Í.N9‹ú·™0·Ó‘`9Bü8[ ¯¹*B9