<?php
echo "ok\n";
